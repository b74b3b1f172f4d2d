//! Real-time policies: a group asking for SCHED_FIFO gets it where runq
//! places its workers, or the run is skipped (exit 77) before any worker
//! with the true cause; on a host with v1 RT group scheduling, a runq
//! started in a cpu cgroup without RT runtime is refused naming it.

use std::process::Output;

use serde_json::Value;

use crate::common::runq;

const FIFO_RUN: [&str; 12] = [
    "run",
    "--work-type",
    "SpinWait",
    "--policy",
    "fifo:1",
    "--cgroup",
    "rt",
    "--workers",
    "2",
    "--duration",
    "0.3",
    "--json",
];

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn fifo_in_a_cgroup_is_applied_or_refused_with_its_cause() {
    let out = runq().args(FIFO_RUN).output().unwrap();
    match out.status.code() {
        Some(0 | 1 | 75) => {
            let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
            let setup = doc["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == "setup_applied")
                .unwrap();
            assert_eq!(setup["pass"], true, "{setup}: {}", stderr(&out));
        }
        Some(77) => assert!(
            stderr(&out).contains("real-time policies are refused even to root"),
            "{}",
            stderr(&out)
        ),
        other => panic!("exit {other:?}: {}", stderr(&out)),
    }
    let v1_rt = std::path::Path::new("/sys/fs/cgroup/cpu/cpu.rt_runtime_us");
    if !v1_rt.exists() {
        return;
    }
    // v1 RT group scheduling: a runq in a new cpu cgroup (runtime 0).
    let dir = format!("/sys/fs/cgroup/cpu/runq-rt-test-{}", std::process::id());
    std::fs::create_dir(&dir).unwrap();
    let script = format!("echo $$ > {dir}/cgroup.procs && exec \"$0\" \"$@\"");
    let out = std::process::Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_runq")])
        .args(FIFO_RUN)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir(&dir);
    assert_eq!(out.status.code(), Some(77), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "cpu cgroup {dir} that runq runs in has cpu.rt_runtime_us 0"
        )),
        "{}",
        stderr(&out)
    );
}
