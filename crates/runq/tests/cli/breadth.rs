//! ktstr's breadth: the work types NetTraffic, IrqWake and
//! CgroupAttachStorm, WakeChain's pipe mode and CgroupChurn's group count
//! and cycle, the checks on placement and rates, and a sample of the
//! catalog's custom shapes, each run by the real binary.

use std::io::Write;
use std::process::Stdio;

use serde_json::Value;

use std::time::Duration;

use crate::common::{assert_explained_verdict, run_dirs_of, runq, wait_for};

/// Runs `runq run ARGS --json` and returns the document and exit code.
fn run_json(args: &[&str]) -> (Value, Option<i32>) {
    let out = runq().arg("run").args(args).arg("--json").output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: bad JSON ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (v, out.status.code())
}

/// Every worker of the run ended its loop and sent a report.
fn assert_all_completed(name: &str, v: &Value) {
    for r in v["reports"].as_array().unwrap() {
        assert_eq!(r["completed"], true, "{name}: {r}");
        assert!(r["exit_info"].is_null(), "{name}: {r}");
    }
}

#[test]
fn the_new_types_run_and_name_what_their_latency_figure_is() {
    for (work, params, workers, figure) in [
        ("NetTraffic", &["proto=tcp"][..], "2", "message_latency"),
        (
            "NetTraffic",
            &["proto=udp", "mode=stream", "msg_bytes=1400"][..],
            "2",
            "message_latency",
        ),
        ("IrqWake", &["period_us=500"][..], "2", "latency"),
        ("IrqWake", &["source=eventfd"][..], "2", "latency"),
        ("WakeChain", &["wake=pipe"][..], "3", "latency"),
    ] {
        let name = format!("{work} {params:?}");
        let mut args = vec!["--work-type", work, "--workers", workers];
        for p in params {
            args.extend(["--param", p]);
        }
        args.extend(["--duration", "400ms", "--no-cgroups"]);
        let (v, code) = run_json(&args);
        assert_explained_verdict(&name, code, &v);
        assert_eq!(v["groups"][0]["wake_figure"], figure, "{name}");
        assert_all_completed(&name, &v);
    }
}

#[test]
fn net_traffic_reports_the_bytes_and_messages_that_arrived() {
    let out = runq()
        .args(["run", "--work-type", "NetTraffic", "--workers", "2"])
        .args(["--duration", "400ms", "--no-cgroups"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // Starved by a loaded host (other tests' runs held both CPUs for the
    // whole 0.4 s), no message arrived, and the load explains it.
    if out.status.code() == Some(75) {
        assert!(text.contains("verdict: INDETERMINATE"), "{text}");
        eprintln!("note: the host kept the run's workers off their CPUs:\n{text}");
        return;
    }
    let line = text
        .lines()
        .find(|l| l.starts_with("* NetTraffic: message latency: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("B/s and ") && line.ends_with(" messages/s arrived"),
        "{line}"
    );
}

#[test]
fn the_new_checks_are_judged_from_a_scenario_file_and_bad_bounds_refused() {
    let scenario = "name = \"rates\"\nduration = \"300ms\"\n\
                    [checks]\nmax_throughput_cv = 10.0\nmin_iteration_rate = 0.0\n\
                    max_cross_node_migration_ratio = 1.0\n\
                    [[group]]\nname = \"spin\"\nwork_type = \"SpinWait\"\nworkers = 2\n";
    let run = |text: &str| {
        let mut child = runq()
            .args(["run", "-", "--no-cgroups", "--json"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run(scenario);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_explained_verdict("rates", out.status.code(), &v);
    let names: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for want in [
        "max_throughput_cv",
        "min_iteration_rate",
        "max_cross_node_migration_ratio",
    ] {
        assert!(names.contains(&want), "{want}: {names:?}");
    }
    let bad = run(&scenario.replace("migration_ratio = 1.0", "migration_ratio = 2.0"));
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("max_cross_node_migration_ratio must be between 0 and 1"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
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

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn the_cgroup_types_move_tasks_and_leave_nothing_behind() {
    for (work, param, figure) in [
        ("CgroupAttachStorm", "moves_per_s=1777", "attach_time"),
        ("CgroupChurn", "groups=5", "none"),
    ] {
        let child = runq()
            .args(["run", "--work-type", work, "--workers", "2"])
            .args(["--param", param, "--duration", "500ms", "--json"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_explained_verdict(work, out.status.code(), &v);
        assert_eq!(v["groups"][0]["wake_figure"], figure, "{work}");
        assert_all_completed(work, &v);
        for r in v["reports"].as_array().unwrap() {
            assert!(r["affinity_error"].is_null(), "{work}: {r}");
            assert!(r["work_units"].as_u64().unwrap() > 0, "{work}: {r}");
        }
        assert!(run_dirs_of(pid).is_empty(), "{work}: cgroups left");
        // A victim whose worker was killed dies by PR_SET_PDEATHSIG, which
        // the kernel delivers as the worker exits: give it a moment.
        wait_for(Duration::from_secs(3), "victims to go", || {
            (processes_naming(param) == 0).then_some(())
        });
    }
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_sample_of_the_custom_shapes_runs_briefly() {
    for name in [
        "cpuset_disjoint",
        "nested_churn_groups",
        "interaction_net_vs_spin",
        "stress_attach_storm",
        "perf_numa_cross",
    ] {
        let (v, code) = run_json(&[name, "--duration", "500ms"]);
        assert_eq!(v["scenario"], name);
        assert_explained_verdict(name, code, &v);
        assert_all_completed(name, &v);
        let check = |n: &str| {
            v["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == n)
                .cloned()
        };
        match name {
            "cpuset_disjoint" => {
                let c = check("cpuset_isolation").expect("judged");
                assert_eq!(c["pass"], true, "the kernel keeps cpusets: {c}");
            }
            "perf_numa_cross" => {
                let c = check("max_cross_node_migration_ratio").expect("judged or skipped");
                let one_node = std::fs::read_dir("/sys/devices/system/node")
                    .map(|d| {
                        d.flatten()
                            .filter(|e| e.file_name().to_string_lossy().starts_with("node"))
                            .count()
                    })
                    .unwrap_or(1)
                    < 2;
                let kind = c["detail"][0]["kind"].as_str().unwrap();
                let too_few = kind == "too_few_migrations";
                let skipped = too_few || kind == "one_numa_node";
                assert_eq!(skipped, one_node || too_few, "{c}");
            }
            _ => {}
        }
    }
}
