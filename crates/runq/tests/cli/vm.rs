//! `runq run --vm`: flag checks that hold on any host (no VM is booted),
//! and, in the VM tier, one small VM that runs a 1 s scenario.

use serde_json::Value;

use std::time::Duration;

use crate::common::{children, group_members, runq, wait_for};

/// Runs runq with `args`; its exit code and stderr.
fn fails(args: &[&str]) -> (Option<i32>, String) {
    let out = runq().args(args).output().expect("run runq");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// runq with `args` ends in one line on stderr that `says` it, exit 2.
fn assert_usage_error(args: &[&str], says: &str) {
    let (code, err) = fails(args);
    assert_eq!(code, Some(2), "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
}

/// The document of a VM run that ended in a verdict (0, 1 or 75).
fn verdict_doc(out: &std::process::Output) -> Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1 | 75)),
        "a verdict, not {:?}: {stderr}",
        out.status.code()
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn bad_topologies_and_sizes_are_usage_errors_before_any_boot() {
    for (args, says) in [
        (vec!["--topology", "2t2c"], "order"),
        (vec!["--topology", "8n8l4c4t"], "at most 252"),
        (vec!["--topology", "6cpu-2llc-smt"], "do not divide evenly"),
        (vec!["--topology", "1n2c1t30d"], "2 or more nodes"),
        (vec!["--kernel", "debian:5.10"], "known: debian:6.1"),
        (vec!["--kernel", "a,b"], "an axis of --vm-matrix"),
        (vec!["--vm-disk", "1M"], "64M or more"),
        (vec!["--topology", "2c9t"], "SMT"),
        (vec!["--memory", "lots"], "such as 2G"),
        (
            vec!["--topology", "4n1c", "--memory", "512M"],
            "at least 1024M",
        ),
        (
            vec!["--kernel", "/nonexistent/vmlinuz"],
            "no such kernel image",
        ),
    ] {
        let mut all = vec!["run", "--work-type", "SpinWait", "--vm"];
        all.extend(&args);
        assert_usage_error(&all, says);
    }
}

#[test]
fn kernel_builds_refuse_what_is_not_a_source_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Makefile"), "all:\n\ttrue\n").unwrap();
    let not_tree = dir.path().to_str().unwrap();
    for (args, says) in [
        (vec!["--source", "/nonexistent"], "not a kernel tree"),
        (vec!["--source", not_tree], "not a kernel tree"),
        (vec!["--debian", "6"], "MAJOR.MINOR"),
        (vec!["--debian", "6.x"], "MAJOR.MINOR"),
        (
            vec!["--source", not_tree, "--debian", "6.12"],
            "cannot be used with",
        ),
    ] {
        let mut all = vec!["vm", "kernel", "build", "--sched-ext"];
        all.extend(&args);
        assert_usage_error(&all, says);
    }
    assert_usage_error(
        &["run", "--vm", "--kernel", not_tree],
        "without bzImage or arch/x86/boot/bzImage",
    );
}

/// A kernel tree whose sched_ext build is in the cache (its image and a
/// scheduler, made here under the key runq computes) is found at once:
/// the document names them and matches its schema, and nothing is built.
#[test]
fn a_cached_build_of_a_tree_is_found_at_once() {
    use std::os::unix::fs::PermissionsExt;
    let tree = tempfile::tempdir().unwrap();
    let makefile = "VERSION = 6\nPATCHLEVEL = 15\nSUBLEVEL = 0\nEXTRAVERSION = -rc2\n";
    std::fs::write(tree.path().join("Makefile"), makefile).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let canon = tree.path().canonicalize().unwrap();
    let id = runq_vm::kernel::cache::Identity::tree(&canon, "6.15.0-rc2", None);
    let dir = id.dir(cache.path(), runq_vm::kernel::fragment(true));
    std::fs::create_dir_all(dir.join("scx")).unwrap();
    std::fs::write(dir.join("bzImage"), "image").unwrap();
    let simple = dir.join("scx/scx_simple");
    std::fs::write(&simple, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&simple, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = runq()
        .args(["vm", "kernel", "build", "--sched-ext", "--json", "--source"])
        .arg(tree.path())
        .env("RUNQ_KERNEL_CACHE", cache.path())
        .output()
        .expect("run runq");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    runq_testkit::assert_matches_schema("vm-kernel-build", &doc);
    assert_eq!(doc["cached"], true, "{doc}");
    assert_eq!(doc["version"], "6.15.0-rc2");
    assert_eq!(doc["image"], dir.join("bzImage").to_str().unwrap());
    assert_eq!(doc["schedulers"][0]["path"], simple.to_str().unwrap());
    assert_eq!(
        doc["steps"].as_array().map(Vec::len),
        Some(0),
        "nothing built"
    );
    assert!(stderr.is_empty(), "no build step announced: {stderr}");
}

/// `runq vm scheduler build` finds a scheduler cargo installed in its
/// cache at once, as text, a path or JSON; a name that is no scx crate is
/// a usage error.
#[test]
fn a_cached_scx_scheduler_is_found_and_bad_names_refused() {
    let cache = tempfile::tempdir().unwrap();
    std::fs::create_dir(cache.path().join("bin")).unwrap();
    std::fs::write(cache.path().join("bin/scx_lavd"), "").unwrap();
    std::fs::write(
        cache.path().join(".crates.toml"),
        "[v1]\n\"scx_lavd 1.0.9 (registry+https://github.com/rust-lang/crates.io-index)\" = \
         [\"scx_lavd\"]\n",
    )
    .unwrap();
    let build = |extra: &[&str]| {
        runq()
            .env("RUNQ_SCX_CACHE", cache.path())
            .args(["vm", "scheduler", "build", "scx_lavd"])
            .args(extra)
            .output()
            .expect("run runq")
    };
    let path = build(&["--path"]);
    let bin = cache.path().join("bin/scx_lavd");
    assert_eq!(
        String::from_utf8_lossy(&path.stdout).trim(),
        bin.display().to_string()
    );
    let doc: Value = serde_json::from_slice(&build(&["--json"]).stdout).expect("JSON");
    runq_testkit::assert_matches_schema("vm-scheduler-build", &doc);
    assert_eq!(doc["cached"], true, "{doc}");
    assert_eq!(doc["version"], "1.0.9", "{doc}");
    assert_usage_error(&["vm", "scheduler", "build", "bpfland"], "scx_bpfland");
}

#[test]
fn vm_flags_need_vm() {
    let (code, err) = fails(&["run", "--topology", "2n2c2t"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--vm"), "{err}");
}

/// runq SIGKILLed while its VM runs: its guard process kills the VM's
/// process group (virtme-ng, qemu) and removes the shared directory, so
/// nothing of the VM is left, though runq itself could undo nothing.
#[test]
#[ignore = "vm tier: boots a VM (about a minute under TCG); needs qemu-system-x86, virtme-ng \
            and a kernel in /boot (`.ci/run` installs them): cargo test -p runq --test cli -- \
            --ignored vm::"]
fn a_killed_runq_leaves_no_vm_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = runq()
        .args([
            "run",
            "steady",
            "--duration",
            "60s",
            "--vm",
            "--memory",
            "1G",
        ])
        .env("TMPDIR", tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn runq");
    let pid = child.id();
    let shared = || -> Vec<std::path::PathBuf> {
        let entries = std::fs::read_dir(tmp.path()).unwrap().flatten();
        let names = entries.map(|e| e.path());
        names
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("runq-vm-")
            })
            .collect()
    };
    // The VM is up: qemu runs in virtme-ng's process group.
    let vm = wait_for(Duration::from_secs(120), "qemu in the VM's group", || {
        let group = *children(pid).first()? as u32;
        let comm = |p: &u32| std::fs::read_to_string(format!("/proc/{p}/comm"));
        let qemu = group_members(group)
            .iter()
            .any(|p| comm(p).is_ok_and(|c| c.starts_with("qemu")));
        qemu.then_some(group)
    });
    assert_eq!(shared().len(), 1, "one shared directory");
    child.kill().unwrap();
    child.wait().unwrap();
    wait_for(
        Duration::from_secs(10),
        "the VM and its directory gone",
        || (group_members(vm).is_empty() && shared().is_empty()).then_some(()),
    );
}

/// Boots a 2-node VM with SMT siblings (2n1c2t: 4 vCPUs) under whatever
/// accelerator works, runs a 1 s scenario in a cgroup there, and checks
/// that the report and `--output` came out with the guest's facts.
#[test]
#[ignore = "vm tier: boots a VM (about a minute under TCG); needs qemu-system-x86, virtme-ng \
            and a kernel in /boot (`.ci/run` installs them): cargo test -p runq --test cli -- \
            --ignored vm::"]
fn boots_a_small_vm_and_runs_one_second() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("vm.json");
    let out = runq()
        .args([
            "run",
            "--work-type",
            "SpinWait",
            "--workers",
            "4",
            "--duration",
            "1s",
        ])
        .args(["--cgroup", "vm-test", "--json", "--output"])
        .arg(&output)
        .args(["--vm", "--topology", "2n1c2t25d", "--memory", "1G"])
        .output()
        .expect("run runq");
    let doc = verdict_doc(&out);
    let host = &doc["host"];
    let vm = &host["vm"];
    assert!(
        ["kvm", "tcg"].contains(&vm["accel"].as_str().unwrap()),
        "{vm}"
    );
    assert_eq!(vm["cpus"], 4, "{vm}");
    assert_eq!(host["online_cpus"], 4, "the guest's CPUs: {host}");
    assert_eq!(host["cgroup_layout"], "v2", "{host}");
    assert!(vm["boot_ms"].as_u64().unwrap() > 0);
    assert_eq!(
        vm["guest_topology"],
        serde_json::json!({"cpus": 4, "numa_nodes": 2, "llcs": 2, "threads_per_core": 2,
                           "remote_distances": [25]}),
        "the guest's own sysfs: {vm}"
    );
    assert!(
        doc["placement"]["cgroups"].is_object(),
        "{}",
        doc["placement"]
    );
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
    assert_eq!(saved["host"]["vm"], *vm);
}

#[test]
fn bad_shards_are_one_line_usage_errors_before_any_boot() {
    for (args, says) in [
        (vec!["--vm-matrix", "--shard", "0/3"], "K counts from 1"),
        (
            vec!["--vm-matrix", "--shard", "4/3"],
            "K counts from 1 to N (3)",
        ),
        (vec!["--vm-matrix", "--shard", "x"], "give K/N"),
        (vec!["--shard", "1/3"], "add --vm-matrix"),
        (vec!["--vm", "--shard", "1/3"], "add --vm-matrix"),
        (vec!["--vm", "--jobs", "2"], "side by side: add --vm-matrix"),
        (vec!["--vm-matrix", "--jobs", "0"], "0 is not in 1..=64"),
        (
            vec!["--vm-matrix", "--topology", "2n2c2t,2n1l2c2t"],
            "the cell SpinWait/2n2c2t twice",
        ),
    ] {
        let mut all = vec!["run", "--work-type", "SpinWait"];
        all.extend(&args);
        assert_usage_error(&all, says);
    }
}

#[test]
fn merge_refuses_what_is_not_a_shard_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("run.json");
    std::fs::write(&other, r#"{"tool":"runq compare","schema_version":1}"#).unwrap();
    let empty = tempfile::tempdir().unwrap();
    for (args, says) in [
        (vec![other.to_str().unwrap()], "not a --vm-matrix shard"),
        (vec!["/dev/zero"], "character device"),
        (
            vec![empty.path().to_str().unwrap()],
            "no --vm-matrix documents",
        ),
    ] {
        let mut all = vec!["report", "merge"];
        all.extend(&args);
        assert_usage_error(&all, says);
    }
}

/// A shard document of the one-cell matrix `SpinWait/2n2c2t` split in
/// two: shard 1 holds the cell (with `verdict`), shard 2 none.
fn one_cell_shard(index: u32, verdict: &str) -> String {
    let (cells, runs) = match index {
        1 => (
            serde_json::json!(["SpinWait/2n2c2t"]),
            serde_json::json!([{
                "cell": "SpinWait/2n2c2t", "scenario": "SpinWait", "topology": "2n2c2t",
                "exit_code": 0, "verdict": verdict, "failed_checks": [], "error": null,
                "vm": {"accel": "tcg", "topology": "2n2c2t", "cpus": 8, "numa_nodes": 2,
                       "threads_per_core": 2, "memory_mib": 2048,
                       "kernel_image": "/boot/vmlinuz", "boot_ms": 41000}
            }]),
        ),
        _ => (serde_json::json!([]), serde_json::json!([])),
    };
    serde_json::json!({
        "tool": "runq run --vm-matrix", "schema_version": 1,
        "matrix": {"cells": ["SpinWait/2n2c2t"], "args": ["run", "--vm-matrix"]},
        "shard": {"index": index, "count": 2, "cells": cells},
        "runs": runs
    })
    .to_string()
}

#[test]
fn merge_refuses_a_verdict_runq_never_writes() {
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("shard-1.json");
    std::fs::write(&bogus, one_cell_shard(1, "bogus")).unwrap();
    assert_usage_error(
        &["report", "merge", bogus.to_str().unwrap()],
        "cell SpinWait/2n2c2t has the verdict `bogus`, which runq never writes",
    );
}

/// Every shard skipped (no virtme-ng on the runners: each `runq run
/// --vm-matrix --json` printed its error document and exited 77): the
/// whole is skipped, exit 77, and -o holds the document --json printed.
#[test]
fn shards_that_were_all_skipped_merge_to_a_skipped_whole() {
    let dir = tempfile::tempdir().unwrap();
    // Each shard run where vng cannot be found (an empty PATH) is skipped
    // and still writes its --output: the error document merge reads.
    let docs: Vec<_> = (1..=2)
        .map(|k| {
            let p = dir.path().join(format!("shard-{k}.json"));
            let shard = runq()
                .args(["run", "--vm-matrix", "--shard", &format!("{k}/2"), "-o"])
                .arg(&p)
                .env("PATH", dir.path())
                .output()
                .unwrap();
            assert_eq!(shard.status.code(), Some(77), "{shard:?}");
            let doc: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            assert_eq!(doc["exit_code"], 77, "{doc}");
            p
        })
        .collect();
    let saved = dir.path().join("merged.json");
    let out = runq()
        .args(["report", "merge", "--json", "-o"])
        .arg(&saved)
        .args(&docs)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(77), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    runq_testkit::assert_matches_schema("report-merge", &doc);
    assert_eq!(
        (doc["verdict"].as_str(), doc["exit_code"].as_u64()),
        (Some("skipped"), Some(77))
    );
    assert_eq!(doc["not_run"].as_array().unwrap().len(), 2, "{doc}");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(written, doc, "--output holds what --json printed");
    let text = runq()
        .args(["report", "merge"])
        .args(&docs)
        .output()
        .unwrap();
    assert_eq!(text.status.code(), Some(77));
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.ends_with("verdict: SKIPPED (exit 77)\n"), "{stdout}");
}

/// A missing shard is an incomplete gauntlet (exit 3) even when it had no
/// cells of its own; `--allow-missing` judges the cells that ran.
#[test]
fn a_missing_shard_is_incomplete_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("shard-1.json");
    std::fs::write(&first, one_cell_shard(1, "pass")).unwrap();
    let merge = |extra: &[&str]| {
        let out = runq()
            .args(["report", "merge", "--json"])
            .args(extra)
            .arg(&first)
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        runq_testkit::assert_matches_schema("report-merge", &doc);
        (out.status.code(), doc)
    };
    let (code, doc) = merge(&[]);
    assert_eq!(code, Some(3), "{doc}");
    assert_eq!(doc["verdict"], "incomplete");
    assert_eq!(doc["shards"]["missing"], serde_json::json!([2]));
    let (code, doc) = merge(&["--allow-missing"]);
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(
        (doc["verdict"].as_str(), doc["allow_missing"].as_bool()),
        (Some("pass"), Some(true))
    );
    let second = dir.path().join("shard-2.json");
    std::fs::write(&second, one_cell_shard(2, "pass")).unwrap();
    let both = runq()
        .args(["report", "merge"])
        .arg(&first)
        .arg(&second)
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(0), "{both:?}");
}

/// IoSyncWrite with `direct = true` on `--vm-disk`'s virtio block device.
#[test]
#[ignore = "vm tier: boots a VM (about a minute under TCG); needs qemu-system-x86, virtme-ng \
            and a kernel in /boot (`.ci/run` installs them): cargo test -p runq --test cli -- \
            --ignored vm::"]
fn io_work_writes_a_virtio_disk_with_vm_disk() {
    let out = runq()
        .args(["run", "--work-type", "IoSyncWrite", "--workers", "2"])
        .args(["--param", "direct=true"])
        .args(["--duration", "1s", "--json", "--memory", "1G"])
        .args(["--vm", "--vm-disk", "128M"])
        .output()
        .expect("run runq");
    let doc = verdict_doc(&out);
    let disk = doc["host"]["vm"]["disk"].as_str().unwrap_or_default();
    assert!(
        disk.starts_with("virtio-blk /dev/vd") && disk.contains("ext4 at /tmp/runq-disk"),
        "{disk}"
    );
    let reports = doc["reports"].as_array().expect("reports");
    assert_eq!(reports.len(), 2, "{reports:?}");
    assert!(
        reports.iter().all(|r| r["completed"] == true),
        "every worker ran to its end on the disk: {reports:?}"
    );
}

/// NetTraffic `path = nic` and IrqWake `source = nic` in one `--vm-net`
/// VM: every message and interrupt crosses the two virtio-net devices.
#[test]
#[ignore = "vm tier: boots a VM (about a minute under TCG); needs qemu-system-x86, virtme-ng \
            and a kernel in /boot (`.ci/run` installs them): cargo test -p runq --test cli -- \
            --ignored vm::"]
fn net_work_crosses_the_nic_pair_with_vm_net() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("nic.toml");
    std::fs::write(
        &scenario,
        "name = \"nic\"\nduration = \"2s\"\n\
         [[group]]\nname = \"net\"\nwork_type = \"NetTraffic\"\nworkers = 2\n\
         params = { path = \"nic\", proto = \"udp\" }\n\
         [[group]]\nname = \"irq\"\nwork_type = \"IrqWake\"\nworkers = 2\n\
         params = { source = \"nic\", period_us = 2000 }\n",
    )
    .unwrap();
    let out = runq()
        .arg("run")
        .arg(&scenario)
        .args(["--json", "--memory", "1G", "--vm", "--vm-net"])
        .output()
        .expect("run runq");
    let doc = verdict_doc(&out);
    let net = doc["host"]["vm"]["net"].as_str().unwrap_or_default();
    assert!(
        net.contains("10.77.0.1") && net.contains("netns runq-peer"),
        "{net}"
    );
    let reports = doc["reports"].as_array().expect("reports");
    assert_eq!(reports.len(), 4, "{reports:?}");
    for r in reports {
        assert_eq!(r["completed"], true, "every worker ran to its end: {r}");
    }
    let receivers_woken = reports
        .iter()
        .filter(|r| r["wake_sample_total"].as_u64().unwrap_or(0) > 0)
        .count();
    assert!(
        receivers_woken >= 2,
        "the net receiver and the irq handler were woken across the devices: {reports:?}"
    );
}

#[test]
#[ignore = "vm tier: boots two VMs (about two minutes under TCG); needs qemu-system-x86, \
            virtme-ng and a kernel in /boot (`.ci/run` installs them): cargo test -p runq \
            --test cli -- --ignored vm::"]
fn two_shards_of_a_small_matrix_merge_into_one_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let mut docs = Vec::new();
    for k in 1..=2 {
        let doc = dir.path().join(format!("shard-{k}.json"));
        let out = runq()
            .args(["run", "--work-type", "SpinWait", "--workers", "2"])
            .args(["--duration", "1s", "--memory", "1G", "--vm-matrix"])
            .args([
                "--topology",
                "1n2c1t,2cpu-1llc-smt",
                "--shard",
                &format!("{k}/2"),
            ])
            .arg("--output")
            .arg(&doc)
            .output()
            .expect("run runq");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(0 | 1 | 75)),
            "shard {k}/2: a verdict, not {:?}: {stderr}",
            out.status.code()
        );
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&doc).unwrap()).unwrap();
        assert_eq!(v["runs"].as_array().unwrap().len(), 1, "one cell each: {v}");
        docs.push(doc);
    }
    let junit = dir.path().join("merged.xml");
    let out = runq()
        .args(["report", "merge", "--json", "--junit"])
        .arg(&junit)
        .args(&docs)
        .output()
        .expect("run runq");
    let merged: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let cells: Vec<&str> = merged["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cell"].as_str().unwrap())
        .collect();
    assert_eq!(cells, ["SpinWait/1n1c2t", "SpinWait/1n2c1t"], "{merged}");
    assert_eq!(merged["missing_cells"], serde_json::json!([]));
    assert_eq!(
        out.status.code(),
        merged["exit_code"].as_i64().map(|c| c as i32)
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testcase").count(), 2, "{xml}");
}
