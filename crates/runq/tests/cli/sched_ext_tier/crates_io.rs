//! Schedulers from crates.io (scx_bpfland, scx_rustland), as a user gets them: `runq vm scheduler
//! build` installs what their build needs and builds them on this host
//! (cached under ~/.cache/runq/scx after the first time), then one guest
//! of the sched_ext kernel runs a scenario under each. Each must carry the
//! run to its verdict, attached under its own ops name and alive to the
//! end.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::{scx_guest, within_ci_budget};
use crate::tier_guest::TierRun;

/// The crates and the start of the ops name each attaches under (its
/// version and target follow: `bpfland_1.1.4_x86_64_unknown_linux_gnu`).
/// One dispatches in BPF, one in user space. (scx_lavd 1.1.4 builds, but
/// 6.12's verifier rejects its `lavd_enqueue`: a start error, exit 3.)
const CRATES: [(&str, &str); 2] = [("scx_bpfland", "bpfland_"), ("scx_rustland", "rustland_")];

/// The longest a build may take: 20 minutes, cut to what is left of
/// CI's budget for the tier.
const BUILD_LIMIT: Duration = Duration::from_secs(20 * 60);

/// Builds (or finds cached) crate `name` within what is left of CI's
/// budget (`timeout` stops cargo and its compilers with it); its binary.
fn built(name: &str) -> PathBuf {
    let limit = within_ci_budget(BUILD_LIMIT).as_secs().to_string();
    let out = std::process::Command::new("timeout")
        .args(["--kill-after=10", &limit])
        .arg(env!("CARGO_BIN_EXE_runq"))
        .args(["vm", "scheduler", "build", name, "--path"])
        .output()
        .expect("run timeout runq");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "building {name}: {stderr}");
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert!(path.is_file(), "{name}: no binary at {}", path.display());
    path
}

/// What is wrong with the run `key` under the crate whose ops name is
/// `ops`, by its exit code and JSON document.
fn run_problems(key: &str, ops: &str, rc: i32, doc: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if !matches!(rc, 0 | 1 | 75) {
        problems.push(format!("{key}: exit {rc}, not a verdict"));
    }
    let attached = doc["scheduler"]["sched_ext_ops"]
        .as_str()
        .unwrap_or_default();
    if !attached.starts_with(ops) {
        problems.push(format!("{key}: scheduler {}", doc["scheduler"]));
    }
    let alive = doc["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["name"] == "scheduler_alive");
    if alive.is_none_or(|c| c["pass"] != true) {
        problems.push(format!("{key}: scheduler_alive {alive:?}"));
    }
    problems
}

#[test]
#[ignore = "sched_ext tier: builds crates.io schedulers and boots a sched_ext kernel in a VM \
            (RUNQ_SCHED_EXT_DIR from scripts/sched-ext/build-kernel): \
            cargo test -p runq --test cli -- --ignored sched_ext_tier::"]
fn crates_io_schedulers_carry_a_run_to_its_verdict() {
    let runs: Vec<TierRun> = CRATES
        .iter()
        .map(|(name, _)| TierRun {
            key: name.to_string(),
            args: ["--work-type", "FutexPingPong", "--workers", "4"]
                .into_iter()
                .map(String::from)
                .chain(["--duration".into(), "3s".into(), "--scheduler".into()])
                .chain([built(name).display().to_string()])
                .collect(),
        })
        .collect();
    let label = "sched_ext-tier crates.io";
    let out = scx_guest(label, Vec::new(), Duration::from_secs(8 * 60)).run(&runs);
    let mut problems = out.leftovers();
    for (name, ops) in CRATES {
        let doc: Value =
            serde_json::from_str(&out.read(name, "json").unwrap_or_default()).unwrap_or_default();
        let err = out.read(name, "err").unwrap_or_default();
        let rc = out.rc(name);
        println!(
            "{label}: {name}: exit {rc}: {}",
            err.lines().next().unwrap_or_default()
        );
        problems.extend(run_problems(name, ops, rc, &doc));
    }
    assert!(problems.is_empty(), "{label}:\n{}", problems.join("\n"));
}
