//! The VM tier: every catalog scenario and every work type, once each, in
//! cgroup-v2 VMs (the catalog in one, the work types in another) with 2
//! NUMA nodes of 2 cores of 2 threads (2n2c2t, 8 vCPUs; virtme-ng,
//! single-threaded TCG), runq run from a copy in the guest's memory.
//! Software emulation is no scheduler's speed, so only what does not
//! depend on it is judged: a verdict was
//! reached (or the run was skipped, exit 77, with its reason), the group
//! setup applied, every worker ran and reported, and nothing was left
//! behind (no runq cgroup, no runq process). Every run's verdict and
//! failed checks are printed as `vm-tier:` lines.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::runq;

/// The guest: cgroup v2 with the controllers systemd would give, then
/// each run with its JSON, stderr and exit code left in the shared dir.
/// Each run may take 5 minutes (exit 124 past them: one stalled run must
/// not take the whole tier).
const GUEST: &str = r#"#!/bin/sh
O="$1"; R="$2"; T="timeout -k 10 300"
# runq from the guest's memory, as `runq run --vm` does: from the 9p root
# every exec faulted the image in page by page (7.6 s for --version).
D=$(mktemp -d /tmp/runq-bin.XXXXXX) && cp "$R" "$D/runq" && R="$D/runq"
for c in cpu cpuset; do echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control; done
# One run: its JSON, stderr, exit code, and its wall seconds with the
# guest's free memory, slab and per-CPU memory after it (kB), to see a
# guest that degrades run by run.
one() {
  k="$1"; shift; t0=$(date +%s)
  NO_COLOR=1 $T "$R" run "$@" --json > "$O/$k.json" 2> "$O/$k.err"; echo $? > "$O/$k.rc"
  m=$(awk '/^(MemAvailable|Slab|Percpu):/ { printf "%s ", $2 }' /proc/meminfo)
  echo "$(( $(date +%s) - t0 )) $m" > "$O/$k.t"
}
for s in $(cat "$O/scenarios"); do one "S-$s" "$s"; done
for t in $(cat "$O/types"); do one "T-$t" --work-type "$t" --duration 1s; done
find /sys/fs/cgroup/runq -mindepth 1 -type d > "$O/leftover-cgroups"
for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = runq ] && echo "${p#/proc/}"; done > "$O/runq-procs"
: > "$O/done"
"#;

/// The names a listing (`runq ARGS --json`) gives under `key`.
fn names(args: &[&str], key: &str) -> Vec<String> {
    let out = runq().args(args).arg("--json").output().expect("run runq");
    let v: Value = serde_json::from_slice(&out.stdout).expect("listing JSON");
    v[key]
        .as_array()
        .expect("a listing")
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

fn kernel() -> PathBuf {
    std::fs::read_dir("/boot")
        .expect("/boot")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("vmlinuz-"))
        .expect("the vm tier needs a kernel image in /boot (apt-get install linux-image-amd64)")
}

/// What is wrong with one run, judged without timings; its line.
fn judge(dir: &Path, key: &str) -> (String, Option<String>) {
    let read = |ext: &str| std::fs::read_to_string(dir.join(format!("{key}.{ext}")));
    let rc: i32 = read("rc").map_or(-1, |t| t.trim().parse().unwrap_or(-1));
    let cost = cost_of_run(&read("t").unwrap_or_default());
    let err = read("err").unwrap_or_default();
    if rc == 77 {
        let why = err.lines().last().unwrap_or_default().to_string();
        let bad = (!why.contains("skipped")).then(|| format!("{key}: exit 77 without a reason"));
        return (format!("{key}: SKIP ({why})"), bad);
    }
    let Ok(doc) = read("json").map(|t| serde_json::from_str::<Value>(&t)) else {
        return (
            format!("{key}: exit {rc} ({cost})"),
            Some(format!("{key}: exit {rc}: {err}")),
        );
    };
    let Ok(doc) = doc else {
        return (
            format!("{key}: exit {rc} ({cost})"),
            Some(format!("{key}: exit {rc}, no JSON: {err}")),
        );
    };
    let failed: Vec<String> = doc["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["pass"] == false)
        .map(|c| {
            format!(
                "{}[{}]",
                c["name"].as_str().unwrap_or("?"),
                c["group"].as_str().unwrap_or("?")
            )
        })
        .collect();
    let line = format!(
        "{key}: {} exit {rc} failed: {} ({})",
        doc["verdict"],
        failed.join(" "),
        cost
    );
    let mut bad = Vec::new();
    if !matches!(rc, 0 | 1 | 75) || !doc["run_error"].is_null() {
        bad.push(format!("exit {rc}, run_error {}", doc["run_error"]));
    }
    bad.extend(
        failed
            .iter()
            .filter(|f| f.starts_with("setup_applied"))
            .cloned(),
    );
    for r in doc["reports"].as_array().into_iter().flatten() {
        if !r["exit_info"].is_null() || !r["start_error"].is_null() {
            bad.push(format!(
                "worker {} did not run: {} {}",
                r["tid"], r["exit_info"], r["start_error"]
            ));
        }
    }
    let units: u64 = doc["reports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["work_units"].as_u64())
        .sum();
    if units == 0 {
        bad.push("no work unit at all".into());
    }
    (
        line,
        (!bad.is_empty()).then(|| format!("{key}: {}", bad.join("; "))),
    )
}

/// A run's wall time and the guest's memory after it, from the guest's
/// `<seconds> <MemAvailable> <Slab> <Percpu>` line (kB).
fn cost_of_run(line: &str) -> String {
    let n: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    match n[..] {
        [secs, avail, slab, percpu] => format!(
            "{secs} s; guest memory available {} MiB, slab {} MiB, per-cpu {} MiB",
            avail / 1024,
            slab / 1024,
            percpu / 1024
        ),
        _ => "no timing".to_string(),
    }
}

/// Boots the tier's VM (2 NUMA nodes × 2 cores × 2 threads, TCG) on
/// `d`, whose guest script runs every scenario and type, and waits for it
/// for at most `limit`, then kills it. TCG runs single-threaded: every
/// run attaches the recorder's tracepoints, and multi-threaded TCG races
/// with the kernel patching its own code for them (a guest locked up on
/// its 48th run, in `exc_int3`). The kernel's console goes to
/// `d/console`.
fn boot_the_tier_vm(d: &Path, limit: Duration) {
    let t0 = Instant::now();
    let console = std::fs::File::create(d.join("console")).expect("console file");
    let mut vm = Command::new("vng")
        .args(["-v", "--disable-kvm", "-r"])
        .arg(kernel())
        .args([
            "--cpus",
            "8,sockets=2,cores=2,threads=2",
            "--memory",
            "2048M",
        ])
        .args(["--numa", "1024M,cpus=0-3", "--numa", "1024M,cpus=4-7"])
        .arg("--qemu-opts=-cpu max,vendor=GenuineIntel -accel tcg,thread=single")
        .arg(format!("--rwdir={}", d.display()))
        .args(["--", "/bin/sh"])
        .arg(d.join("guest.sh"))
        .arg(d)
        .arg(env!("CARGO_BIN_EXE_runq"))
        .stdin(Stdio::null())
        .stdout(console)
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("the vm tier needs virtme-ng's vng (pip install virtme-ng)");
    while vm.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            // SAFETY: killing the process group this test made (vng, qemu).
            unsafe { libc::kill(-(vm.id() as i32), libc::SIGKILL) };
            let _ = vm.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
#[ignore = "vm tier: every scenario and work type in two 2n2c2t cgroup-v2 VMs (up to 15 min each \
            under TCG on 2 cores); needs qemu-system-x86, virtme-ng and a kernel in /boot (`.ci/run` \
            installs them): cargo test -p runq --test cli -- --ignored vm_tier::"]
fn vm_tier_every_scenario_and_work_type_in_a_2n2c2t_vm() {
    let scenarios = names(&["run", "--list-scenarios"], "scenarios");
    let types = names(&["run", "--list"], "work_types");
    // Two guests, the catalog in one and the work types in the other: one
    // guest of 100 runs stalled on its 87th (PageFaultChurn past its own
    // 300 s limit), which ran alone in a fresh guest in seconds.
    let mut problems = tier_guest(&scenarios, &[]);
    problems.extend(tier_guest(&[], &types));
    assert!(problems.is_empty(), "vm tier:\n{}", problems.join("\n"));
}

/// Runs `scenarios` and `types` in one tier guest and says what went
/// wrong: runs without a verdict, setup not applied, cgroups or
/// processes left behind.
fn tier_guest(scenarios: &[String], types: &[String]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("scenarios"), scenarios.join("\n")).unwrap();
    std::fs::write(d.join("types"), types.join("\n")).unwrap();
    std::fs::write(d.join("guest.sh"), GUEST).unwrap();
    let t0 = Instant::now();
    boot_the_tier_vm(d, Duration::from_secs(15 * 60));
    let mut problems = Vec::new();
    if !d.join("done").exists() {
        problems
            .push("the guest did not finish its runs (the lines below are those it did)".into());
        println!("vm-tier: the guest's console, its kernel's complaints:");
        let console = std::fs::read_to_string(d.join("console")).unwrap_or_default();
        let complaints = console.lines().filter(|l| {
            ["BUG", "Oops", "stall", "lockup", "panic", "blocked for"]
                .iter()
                .any(|w| l.contains(w))
        });
        for line in complaints.take(20) {
            println!("vm-tier:   {line}");
        }
    }
    println!(
        "vm-tier: {} runs in {:.0} s",
        scenarios.len() + types.len(),
        t0.elapsed().as_secs_f64()
    );
    let keys = scenarios
        .iter()
        .map(|s| format!("S-{s}"))
        .chain(types.iter().map(|t| format!("T-{t}")));
    for key in keys.filter(|k| d.join(format!("{k}.rc")).exists()) {
        let (line, bad) = judge(d, &key);
        println!("vm-tier: {line}");
        problems.extend(bad);
    }
    for (file, what) in [
        ("leftover-cgroups", "runq cgroups left"),
        ("runq-procs", "runq processes left"),
    ] {
        let left = std::fs::read_to_string(d.join(file)).unwrap_or_default();
        if !left.trim().is_empty() {
            problems.push(format!(
                "{what}: {}",
                left.split_whitespace().collect::<Vec<_>>().join(" ")
            ));
        }
    }
    problems
}
