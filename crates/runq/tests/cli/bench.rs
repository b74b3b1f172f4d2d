//! The benchmark tier: figures that depend on the host's load (fair
//! shares, step instants, bounds that a busy host can miss). Ignored by
//! the default `cargo test`; `scripts/bench` runs them one at a time on a
//! release build and prints their figures. Each asserts what a quiet host
//! must show.

use serde_json::Value;

use crate::scenarios::{failed_checks, run_json, scenario, SUITE};

/// The measured value of `check` for `group`.
fn measured(v: &Value, check: &str, group: &str) -> f64 {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == check && c["group"] == group)
        .and_then(|c| c["measured"].as_f64())
        .unwrap_or_else(|| panic!("no {check} for {group}"))
}

/// Every suite scenario passes on a quiet host.
#[test]
#[ignore = "bench tier (scripts/bench): judges the host's scheduling"]
fn bench_suite_scenarios_pass() {
    for name in SUITE {
        let (code, v, err) = run_json(&["run", &scenario(name)]);
        let failed = failed_checks(&v);
        println!(
            "figure: {name}: verdict {} ({} failed)",
            v["verdict"],
            failed.len()
        );
        assert_eq!(v["verdict"], "pass", "{name}: {failed:?} {err}");
        assert_eq!(code, Some(0), "{name}: {err}");
    }
}

/// Every ready-made scenario on this host: its verdict and, for a FAIL,
/// the explanation of each failed check.
#[test]
#[ignore = "bench tier (scripts/bench): judges the host's scheduling"]
fn bench_catalog_scenarios() {
    let out = crate::common::runq()
        .args(["run", "--list-scenarios", "--json"])
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    for s in list["scenarios"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        let out = crate::common::runq()
            .args(["run", name, "--json"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let Ok(v) = serde_json::from_slice::<Value>(&out.stdout) else {
            println!(
                "figure: catalog {name}: exit {:?}: {}",
                out.status.code(),
                err.trim()
            );
            continue;
        };
        let failed: Vec<String> = v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["pass"] == false)
            .map(|c| format!("{} {} ({})", c["name"], c["group"], c["detail"]))
            .collect();
        println!("figure: catalog {name}: {} {failed:?}", v["verdict"]);
    }
}

/// A 1:4 weight split gives each group its share within ±10% of what it
/// is owed (the `min_fair_share` check's measured value is got/owed).
#[test]
#[ignore = "bench tier (scripts/bench): judges the host's scheduling"]
fn bench_one_to_four_weight_split_shares() {
    let (_, v, err) = run_json(&["run", &scenario("tests/weight-1-4.toml")]);
    for group in ["light", "heavy"] {
        let ratio = measured(&v, "min_fair_share", group);
        println!("figure: weight 1:4 {group}: got/owed {ratio:.3}");
        assert!((0.9..=1.1).contains(&ratio), "{group}: {ratio} {err}");
    }
}

/// Groups join and leave at their steps' instants (within 150 ms).
#[test]
#[ignore = "bench tier (scripts/bench): judges the host's scheduling"]
fn bench_steps_happen_on_time() {
    let (_, v, _) = run_json(&["run", &scenario("tests/add-remove.toml")]);
    let wall_ms = |g: u64| {
        v["reports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["group_idx"] == g)
            .and_then(|r| r["wall_time_ns"].as_u64())
            .unwrap() as f64
            / 1e6
    };
    let (late, leaver) = (wall_ms(2), wall_ms(3));
    println!("figure: add-remove: late group ran {late:.0} ms (1200 expected), leaver {leaver:.0} ms (800 expected)");
    assert!((late - 1200.0).abs() < 150.0, "late {late}");
    assert!((leaver - 800.0).abs() < 150.0, "leaver {leaver}");
}

/// SIGINT while 2,000 workers are forked, and again once they all spin:
/// runq exits within 1 s of the signal (the bound).
#[test]
#[ignore = "bench tier (scripts/bench): times an exit on a host under load"]
fn bench_sigint_exits_within_one_second_with_2000_workers() {
    use crate::common::{children, signal, spawn, wait_for};
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let scn = dir.path().join("crowd.toml");
    std::fs::write(
        &scn,
        "duration = \"20s\"\n[[group]]\nname = \"many\"\nwork_type = \"SpinWait\"\nworkers = 2000\n",
    )
    .unwrap();
    for (phase, children_before_signal) in [("spawn", 500), ("run", 2000)] {
        let child = spawn(&["run", scn.to_str().unwrap(), "--no-cgroups"]);
        let pid = child.id();
        wait_for(Duration::from_secs(60), "workers", || {
            (children(pid).len() >= children_before_signal).then_some(())
        });
        if phase == "run" {
            std::thread::sleep(Duration::from_millis(500));
        }
        let t = Instant::now();
        signal(pid as i32, libc::SIGINT);
        let out = child.wait_with_output().unwrap();
        let secs = t.elapsed().as_secs_f64();
        println!(
            "figure: SIGINT during {phase} of 2000 workers: exit {:?} after {secs:.2} s",
            out.status.code()
        );
        assert_eq!(out.status.code(), Some(130));
        assert!(secs < 1.0, "{phase}: {secs} s");
    }
}

/// runq's wake latency against the kernel's for the same wakeups
/// (`scripts/wake-truth`: bpftrace's `sched_waking` → switch-in of the
/// run's own workers woken by each other): FutexPingPong, PipeIo and
/// WakeChain, each p50 within 2 × the kernel's + 1.5 µs.
#[test]
#[ignore = "bench tier (scripts/bench): needs root and bpftrace; judges the host's wakeups"]
fn bench_wake_latency_agrees_with_the_kernel() {
    let text = run_script(
        "wake-truth",
        &["--runq", env!("CARGO_BIN_EXE_runq"), "--rounds", "1"],
    );
    for line in text.lines().filter(|l| l.starts_with("| ")) {
        println!("figure: wake-truth {line}");
    }
}

/// The wake path with runq's defaults (`scripts/wake-path-cost`, no
/// flag: snapshots on, the recorder within its budget): FutexPingPong and
/// PipeIo pinned, at least 0.95 of their bare floors and 0.98 of the same
/// run with `--evidence off`, so that a default that costs the floors
/// cannot land unseen.
#[test]
#[ignore = "bench tier (scripts/bench): needs root, perf and cc; judges the host's wakeups"]
fn bench_wake_path_floors_with_defaults() {
    run_script(
        "wake-path-cost",
        &[env!("CARGO_BIN_EXE_runq"), "3", "3", "1"],
    );
}

/// Runs `scripts/NAME` with `args`, prints its `figure:` lines, asserts
/// it exited 0 and hands back its stdout.
fn run_script(name: &str, args: &[&str]) -> String {
    let script = format!("{}/../../scripts/{name}", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("scripts/{name}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    for line in text.lines().filter(|l| l.starts_with("figure:")) {
        println!("{line}");
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}
