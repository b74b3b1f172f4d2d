//! The sched_ext tier: real BPF schedulers under test in a VM that boots a
//! sched_ext kernel (`runq vm kernel build --debian 6.12 --sched-ext`
//! builds and caches it with the tree's `tools/sched_ext` schedulers;
//! `scripts/sched-ext/build-kernel` installs what it needs and calls it).
//! scx_simple must carry a `--vm` run to its verdict; the whole catalog
//! runs under scx_simple and under scx_qmap, one guest each, and every
//! scenario must reach its verdict with the scheduler alive; each known
//! fault (scx_qmap's stall, error and loop switches, a SIGKILLed
//! scheduler) must end in a FAIL that names it, not in a VM timeout; by
//! default a scheduler is ready once the kernel reports it attached, and
//! one the kernel ejects while its process lives FAILs in its words, with
//! its state (the kernel's dump, its BPF maps) at that moment; two
//! crates.io schedulers build here and carry a run (`crates_io`).
//!
//! `RUNQ_SCHED_EXT_DIR` names the build's directory (its `bzImage` and
//! `scx/`); without it each test says why it cannot run and fails, so the
//! tier is run only where the kernel was built (`.ci/run` builds it).

mod crates_io;
mod matrix;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::common::runq;
use crate::tier_guest::{judge_all, names, TierGuest, TierRun};

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
    assert_eq!(dsq["detail"][0]["kind"], "dsq_depths", "{dsq}");
    assert!(dsq["detail"][0]["dumps"].as_u64() > Some(0), "{dsq}");
    assert_eq!(
        doc["host"]["vm"]["tcg_threads"], "single",
        "{}",
        doc["host"]["vm"]
    );
}

/// A guest of the sched_ext kernel with 4 vCPUs on one node, as long as
/// `limit` allows and CI's budget (`RUNQ_TIER_DEADLINE`, Unix seconds)
/// leaves.
fn scx_guest(label: &str, run_args: Vec<String>, limit: Duration) -> TierGuest {
    let (dir, _) = build();
    TierGuest {
        label: label.to_string(),
        kernel: dir.join("bzImage"),
        topology: "1n4c1t".into(),
        run_args,
        limit: within_ci_budget(limit),
    }
}

/// `limit`, cut to what is left of CI's budget when it sets one.
fn within_ci_budget(limit: Duration) -> Duration {
    let Some(deadline) = std::env::var("RUNQ_TIER_DEADLINE")
        .ok()
        .and_then(|d| d.parse::<u64>().ok())
    else {
        return limit;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let left = Duration::from_secs(deadline.saturating_sub(now));
    assert!(
        left >= Duration::from_secs(60),
        "not run: CI's budget for the tier (RUNQ_TIER_DEADLINE) is spent"
    );
    limit.min(left)
}

/// Every catalog scenario in one guest under `scheduler` (a name in the
/// build's scx/): each must reach its verdict with the scheduler alive
/// to the end, set up as asked, every worker reporting, nothing left.
fn catalog_under(label: &'static str, scheduler: &str) {
    let (_, scx) = build();
    let path = scx.join(scheduler).to_string_lossy().into_owned();
    let args = vec![path, "--scheduler-ready-sched-ext".to_string()];
    let run_args = [vec!["--scheduler".to_string()], args].concat();
    let runs: Vec<TierRun> = names(&["run", "--list-scenarios"], "scenarios")
        .iter()
        .map(|s| TierRun::scenario(s))
        .collect();
    let out = scx_guest(label, run_args, Duration::from_secs(15 * 60)).run(&runs);
    let problems = judge_all(label, &out, &runs);
    assert!(problems.is_empty(), "{label}:\n{}", problems.join("\n"));
}

#[test]
#[ignore = "sched_ext tier: boots a sched_ext kernel in a VM (RUNQ_SCHED_EXT_DIR from \
            scripts/sched-ext/build-kernel): cargo test -p runq --test cli -- --ignored sched_ext_tier::"]
fn catalog_under_scx_simple() {
    catalog_under("sched_ext-tier scx_simple", "scx_simple");
}

#[test]
#[ignore = "sched_ext tier: boots a sched_ext kernel in a VM (RUNQ_SCHED_EXT_DIR from \
            scripts/sched-ext/build-kernel): cargo test -p runq --test cli -- --ignored sched_ext_tier::"]
fn catalog_under_scx_qmap() {
    catalog_under("sched_ext-tier scx_qmap", "scx_qmap");
}

/// A known fault: its name, the scheduler's command line (`{scx}` for the
/// build's scx/), and what runq's first line must say of it.
const FAULTS: [(&str, &str, &str); 5] = [
    (
        "qmap-t5-user-thread-stall",
        "{scx}/scx_qmap -t 5",
        "ejected BPF scheduler \"qmap\": runnable task stall",
    ),
    (
        "qmap-T5-kernel-thread-stall",
        "{scx}/scx_qmap -T 5",
        "ejected BPF scheduler \"qmap\": runnable task stall",
    ),
    (
        "qmap-e50-scx_bpf_error",
        "{scx}/scx_qmap -e 50",
        "ejected BPF scheduler \"qmap\": scx_bpf_error",
    ),
    (
        "qmap-l50-dispatch-loop",
        "{scx}/scx_qmap -l 50",
        "ejected BPF scheduler \"qmap\"",
    ),
    (
        "simple-sigkill-at-3s",
        "sh -c '(sleep 3; kill -9 $$) & exec {scx}/scx_simple'",
        "killed by signal 9",
    ),
];

/// The fault matrix in one guest: scx_qmap's own fault switches (a user
/// thread and a kernel thread never dispatched, an injected
/// `scx_bpf_error`, a dispatch loop) and scx_simple SIGKILLed 3 s in. Each
/// must end in FAIL (exit 1) whose first line names the fault, not in a
/// timeout or a lost guest.
#[test]
#[ignore = "sched_ext tier: boots a sched_ext kernel in a VM (RUNQ_SCHED_EXT_DIR from \
            scripts/sched-ext/build-kernel): cargo test -p runq --test cli -- --ignored sched_ext_tier::"]
fn each_known_fault_fails_naming_itself() {
    let (_, scx) = build();
    let scx = scx.to_string_lossy();
    let runs: Vec<TierRun> = FAULTS
        .iter()
        .map(|(key, sched, _)| TierRun {
            key: key.to_string(),
            args: [
                "--work-type",
                "FutexPingPong",
                "--workers",
                "4",
                "--duration",
                "8s",
                "--scheduler",
                &sched.replace("{scx}", &scx),
                "--scheduler-ready-sched-ext",
            ]
            .map(String::from)
            .to_vec(),
        })
        .collect();
    let label = "sched_ext-tier faults";
    let out = scx_guest(label, Vec::new(), Duration::from_secs(10 * 60)).run(&runs);
    let mut problems = out.leftovers();
    for (key, _, names) in FAULTS {
        let first = out.read(key, "err").unwrap_or_default();
        let first = first.lines().next().unwrap_or_default().to_string();
        let rc = out.rc(key);
        println!("{label}: {key}: exit {rc}: {first}");
        if rc != 1 || !first.contains(names) {
            problems.push(format!(
                "{key}: exit {rc}, first line not naming \"{names}\": {first}"
            ));
        }
    }
    let stall: Value = serde_json::from_str(&out.read(FAULTS[0].0, "json").unwrap_or_default())
        .unwrap_or_default();
    let exit = &stall["scheduler_death"]["sched_ext_exit"];
    if exit["reason"] != "runnable task stall" || exit["error"] != true {
        problems.push(format!("{}: sched_ext_exit {exit}", FAULTS[0].0));
    }
    problems.extend(state_dump_problems(FAULTS[0].0, &stall));
    assert!(problems.is_empty(), "{label}:\n{}", problems.join("\n"));
}

/// What is wrong with the state dump of an ejected scheduler's run `doc`
/// (`key`): it must hold the kernel's own exit dump and the scheduler's
/// BPF maps, taken as sched_ext let it go, and name its file.
fn state_dump_problems(key: &str, doc: &Value) -> Vec<String> {
    let dumps = doc["scheduler"]["state_dumps"].as_array().cloned();
    let end = dumps
        .unwrap_or_default()
        .into_iter()
        .find(|d| d["moment"] == "let_go");
    let Some(d) = end else {
        return vec![format!(
            "{key}: no state dump at the ejection: {}",
            doc["scheduler"]
        )];
    };
    let trigger = d["kernel_trigger"].as_str().unwrap_or_default();
    let ok = trigger.contains("triggered exit kind")
        && d["kernel_lines"].as_u64().unwrap_or(0) > 10
        && d["maps"].as_u64().unwrap_or(0) > 0
        && d["file"].is_string();
    match ok {
        true => Vec::new(),
        false => vec![format!("{key}: state dump {d}")],
    }
}

/// The kernel's word on the scheduler, by default (no readiness flag):
/// its name, its command (`{scx}` for the build's scx/), extra arguments
/// and what runq must end in (exit code, a piece of its stderr).
const KERNEL_WORD: [(&str, &str, &str, i32, &str); 4] = [
    // The kernel ejects scx_qmap's stall while the watched process (a
    // sleep that ignores the watchdog's SIGUSR2) lives on: a FAIL in the
    // kernel's words, not a PASS.
    (
        "ejected-while-its-process-lives",
        "sh -c 'trap \"\" USR2; {scx}/scx_qmap -t 5 & exec sleep 1000'",
        "--duration 8s",
        1,
        "ejected BPF scheduler \"qmap\": runnable task stall",
    ),
    // A process that never attaches a BPF scheduler: a run error, not a
    // run under the kernel's own scheduler.
    (
        "never-attaches",
        "sleep 1000",
        "--duration 2s --scheduler-ready-timeout 5s",
        3,
        "it never attached",
    ),
    // Ejected before it is ready (its readiness line never comes): a
    // FAIL in the kernel's words, not a start error.
    (
        "ejected-before-ready",
        "{scx}/scx_qmap -t 5",
        "--duration 2s --scheduler-ready-pattern NEVER_PRINTED",
        1,
        "ejected BPF scheduler \"qmap\": runnable task stall",
    ),
    // A scheduler that takes 4 s to load: the run waits for it.
    (
        "attaches-late",
        "sh -c 'sleep 4; exec {scx}/scx_simple'",
        "--duration 2s",
        0,
        "",
    ),
];

/// Readiness by the kernel's report and sched_ext's state watched through
/// the run, in one guest: each case of [`KERNEL_WORD`] ends as it must,
/// and the late scheduler's run was judged under it.
#[test]
#[ignore = "sched_ext tier: boots a sched_ext kernel in a VM (RUNQ_SCHED_EXT_DIR from \
            scripts/sched-ext/build-kernel): cargo test -p runq --test cli -- --ignored sched_ext_tier::"]
fn the_kernels_word_decides_readiness_and_the_schedulers_life() {
    let (_, scx) = build();
    let scx = scx.to_string_lossy();
    let runs: Vec<TierRun> = KERNEL_WORD
        .iter()
        .map(|(key, sched, extra, _, _)| TierRun {
            key: key.to_string(),
            args: ["--work-type", "FutexPingPong", "--workers", "4"]
                .into_iter()
                .chain(extra.split(' '))
                .map(String::from)
                .chain(["--scheduler".into(), sched.replace("{scx}", &scx)])
                .collect(),
        })
        .collect();
    let label = "sched_ext-tier kernel's word";
    let out = scx_guest(label, Vec::new(), Duration::from_secs(8 * 60)).run(&runs);
    let mut problems = out.leftovers();
    for (key, _, _, want_rc, says) in KERNEL_WORD {
        let err = out.read(key, "err").unwrap_or_default();
        let first = err.lines().next().unwrap_or_default();
        let rc = out.rc(key);
        println!("{label}: {key}: exit {rc}: {first}");
        let rc_ok = rc == want_rc || (want_rc == 0 && matches!(rc, 1 | 75));
        if !rc_ok || !first.contains(says) {
            problems.push(format!(
                "{key}: exit {rc} (want {want_rc}), first line: {first}"
            ));
        }
    }
    let lives: Value =
        serde_json::from_str(&out.read(KERNEL_WORD[0].0, "json").unwrap_or_default())
            .unwrap_or_default();
    let status = lives["scheduler_death"]["status"]
        .as_str()
        .unwrap_or_default();
    if !status.contains("still running when sched_ext let it go") {
        problems.push(format!("{}: death {status:?}", KERNEL_WORD[0].0));
    }
    problems.extend(state_dump_problems(KERNEL_WORD[0].0, &lives));
    let late: Value = serde_json::from_str(&out.read(KERNEL_WORD[3].0, "json").unwrap_or_default())
        .unwrap_or_default();
    let s = &late["scheduler"];
    if s["sched_ext_ops"] != "simple" || s["ready_ms"].as_u64().unwrap_or(0) < 4000 {
        problems.push(format!("{}: scheduler {s}", KERNEL_WORD[3].0));
    }
    assert!(problems.is_empty(), "{label}:\n{}", problems.join("\n"));
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
