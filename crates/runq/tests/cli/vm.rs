//! `runq run --vm`: flag checks that hold on any host (no VM is booted),
//! and, in the VM tier, one small VM that runs a 1 s scenario.

use serde_json::Value;

use crate::common::runq;

/// Runs runq with `args`; its exit code and stderr.
fn fails(args: &[&str]) -> (Option<i32>, String) {
    let out = runq().args(args).output().expect("run runq");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_topologies_and_sizes_are_usage_errors_before_any_boot() {
    for (args, says) in [
        (vec!["--topology", "2t2c"], "order"),
        (vec!["--topology", "8n4c4t"], "at most 64"),
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
        let (code, err) = fails(&all);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
    }
}

#[test]
fn vm_flags_need_vm() {
    let (code, err) = fails(&["run", "--topology", "2n2c2t"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--vm"), "{err}");
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
        .args(["--vm", "--topology", "2n1c2t", "--memory", "1G"])
        .output()
        .expect("run runq");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1 | 75)),
        "a verdict, not {:?}: {stderr}",
        out.status.code()
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
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
    assert!(
        doc["placement"]["cgroups"].is_object(),
        "{}",
        doc["placement"]
    );
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
    assert_eq!(saved["host"]["vm"], *vm);
}
