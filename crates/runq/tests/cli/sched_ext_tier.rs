//! The sched_ext tier: real BPF schedulers under test in a VM that boots a
//! sched_ext kernel (`runq vm kernel build --debian 6.12 --sched-ext`
//! builds and caches it with the tree's `tools/sched_ext` schedulers;
//! `scripts/sched-ext/build-kernel` installs what it needs and calls it). scx_simple must carry a
//! run to its verdict; scx_qmap's injected stall (`-t N`: every Nth user
//! thread is never dispatched) must end in a FAIL that names the kernel's
//! ejection and its reason, not in a VM timeout.
//!
//! `RUNQ_SCHED_EXT_DIR` names the build's directory (its `bzImage` and
//! `scx/`); without it each test says why it cannot run and fails, so the
//! tier is run only where the kernel was built (`.ci/run` builds it).

use std::path::PathBuf;

use serde_json::Value;

use crate::common::runq;

/// The sched_ext build's directory.
fn build_dir() -> PathBuf {
    std::env::var_os("RUNQ_SCHED_EXT_DIR")
        .map(PathBuf::from)
        .expect("RUNQ_SCHED_EXT_DIR: run scripts/sched-ext/build-kernel and export its output")
}

/// The sched_ext build: its directory (which `--kernel` takes) and its
/// scheduler directory.
fn build() -> (PathBuf, PathBuf) {
    let dir = build_dir();
    let (kernel, scx) = (dir.join("bzImage"), dir.join("scx"));
    assert!(kernel.is_file(), "no {}", kernel.display());
    assert!(
        scx.join("scx_simple").is_file(),
        "no scx_simple in {}",
        scx.display()
    );
    (dir, scx)
}

/// Runs `runq run` with `args` in a 2-vCPU VM of the sched_ext kernel
/// under `scheduler`; the exit code, the JSON document and stderr.
fn run_under(scheduler: &str, args: &[&str]) -> (Option<i32>, Value, String) {
    let (dir, _) = build();
    let out = runq()
        .arg("run")
        .args(args)
        .args([
            "--scheduler",
            scheduler,
            "--scheduler-ready-sched-ext",
            "--json",
        ])
        .arg("--vm")
        .arg("--kernel")
        .arg(&dir)
        .args(["--topology", "1n2c1t", "--memory", "1G"])
        .output()
        .expect("run runq");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let doc =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON ({e}): {stderr}"));
    (out.status.code(), doc, stderr)
}

#[test]
#[ignore = "sched_ext tier: boots a sched_ext kernel in a VM (RUNQ_SCHED_EXT_DIR from \
            scripts/sched-ext/build-kernel): cargo test -p runq --test cli -- --ignored sched_ext_tier::"]
fn scx_simple_carries_a_run_to_its_verdict() {
    let (_, scx) = build();
    let simple = scx.join("scx_simple");
    let (code, doc, stderr) = run_under(
        simple.to_str().unwrap(),
        &[
            "--work-type",
            "SpinWait",
            "--workers",
            "2",
            "--duration",
            "2s",
        ],
    );
    assert!(
        matches!(code, Some(0 | 1 | 75)),
        "a verdict, not {code:?}: {stderr}"
    );
    let alive = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "scheduler_alive")
        .expect("scheduler_alive");
    assert_eq!(alive["pass"], true, "{alive}: {stderr}");
    assert_eq!(
        doc["scheduler"]["sched_ext_ops"], "simple",
        "{}",
        doc["scheduler"]
    );
    assert_eq!(doc["scheduler"]["sched_ext_state"], "enabled");
    // 6.12 gives nr_rejected but no root/events (6.15+).
    let rejected = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "max_scx_rejected_tasks")
        .expect("max_scx_rejected_tasks judged");
    assert_eq!(rejected["pass"], true, "{rejected}");
    let skipped = doc["skipped_checks"].as_array().expect("skipped_checks");
    for name in ["max_scx_fallback_rate", "max_scx_keep_last_rate"] {
        let s = skipped.iter().find(|c| c["name"] == name).expect(name);
        assert!(s["reason"].as_str().unwrap().contains("root/events"), "{s}");
    }
    // 6.12 has the sched_ext_dump trace event: the host monitor's first
    // dump comes as the run starts.
    let dsq = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "max_scx_local_dsq_depth")
        .expect("max_scx_local_dsq_depth judged");
    assert_eq!(dsq["pass"], true, "{dsq}");
    assert!(
        dsq["detail"].as_str().unwrap().contains("sched_ext dumps"),
        "{dsq}"
    );
    assert_eq!(
        doc["host"]["vm"]["tcg_threads"], "single",
        "{}",
        doc["host"]["vm"]
    );
}

#[test]
#[ignore = "sched_ext tier: boots a sched_ext kernel in a VM (RUNQ_SCHED_EXT_DIR from \
            scripts/sched-ext/build-kernel): cargo test -p runq --test cli -- --ignored sched_ext_tier::"]
fn scx_qmap_stall_is_a_fail_that_names_the_ejection() {
    let (_, scx) = build();
    let qmap = format!("{} -t 5", scx.join("scx_qmap").display());
    let (code, doc, stderr) = run_under(
        &qmap,
        &[
            "--work-type",
            "FutexPingPong",
            "--workers",
            "4",
            "--duration",
            "8s",
        ],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(doc["verdict"], "fail");
    let exit = &doc["scheduler_death"]["sched_ext_exit"];
    assert_eq!(
        exit["reason"], "runnable task stall",
        "{}",
        doc["scheduler_death"]
    );
    assert_eq!(exit["error"], true);
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.contains("the kernel ejected BPF scheduler \"qmap\": runnable task stall"),
        "{stderr}"
    );
}

/// The build of the tier is found in the cache at once, with its image
/// and schedulers, and its document matches its schema.
#[test]
#[ignore = "sched_ext tier: boots a sched_ext kernel in a VM (RUNQ_SCHED_EXT_DIR from \
            scripts/sched-ext/build-kernel): cargo test -p runq --test cli -- --ignored sched_ext_tier::"]
fn the_cached_build_is_found_with_its_schedulers() {
    let dir = build_dir();
    let out = runq()
        .args([
            "vm",
            "kernel",
            "build",
            "--debian",
            "6.12",
            "--sched-ext",
            "--json",
        ])
        .env("RUNQ_KERNEL_CACHE", dir.parent().unwrap())
        .output()
        .expect("run runq");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    runq_testkit::assert_matches_schema("vm-kernel-build", &doc);
    assert_eq!(doc["cached"], true, "{doc}");
    assert_eq!(doc["cache_dir"], dir.to_str().unwrap());
    assert_eq!(doc["image"], dir.join("bzImage").to_str().unwrap());
    let names: Vec<&str> = doc["schedulers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert!(
        names.contains(&"scx_simple") && names.contains(&"scx_qmap"),
        "{names:?}"
    );
}
