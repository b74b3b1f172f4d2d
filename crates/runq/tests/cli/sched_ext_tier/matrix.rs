//! A scheduler matrix in the sched_ext tier: two scenarios under the
//! kernel's own scheduler and scx_simple, one VM each, then `runq
//! compare` on the document: every cell reaches its verdict, each row
//! carries its checks with a value per repeat, and the table names both
//! schedulers.

use serde_json::Value;

use crate::common::runq;

use super::{build, within_ci_budget};

#[test]
#[ignore = "sched_ext tier: boots a sched_ext kernel in a VM (RUNQ_SCHED_EXT_DIR from \
            scripts/sched-ext/build-kernel): cargo test -p runq --test cli -- --ignored sched_ext_tier::"]
fn a_scheduler_matrix_sets_the_kernels_own_beside_scx_simple() {
    within_ci_budget(std::time::Duration::from_secs(600));
    let (dir, scx) = build();
    let tmp = tempfile::tempdir().unwrap();
    let doc_path = tmp.path().join("m.json");
    let out = runq()
        .args(["run", "steady,mixed_workloads", "--vm-matrix", "--kernel"])
        .arg(&dir)
        .args(["--topology", "1n4c1t", "--duration", "1s", "--repeat", "2"])
        .args(["--scheduler", "kernel", "--scheduler"])
        .arg(scx.join("scx_simple"))
        .args(["--scheduler-ready-sched-ext", "--jobs", "2", "-o"])
        .arg(&doc_path)
        .output()
        .expect("run runq");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1 | 75)), "{stderr}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&doc_path).unwrap()).unwrap();
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "{doc:#}");
    for r in runs {
        assert!(r["verdict"].is_string(), "no verdict: {r:#}");
        let checks = r["checks"].as_array().unwrap();
        assert!(
            checks.iter().any(|c| c["check"] == "not_stuck"
                && c["of"] == 2
                && c["measured"].as_array().is_some_and(|m| m.len() == 2)),
            "{r:#}"
        );
    }
    let cmp = runq().arg("compare").arg(&doc_path).output().unwrap();
    let text = String::from_utf8_lossy(&cmp.stdout);
    println!("sched_ext-tier matrix:\n{text}");
    assert!(matches!(cmp.status.code(), Some(0 | 1)), "{text}");
    assert!(
        text.contains("\nkernel ") && text.contains("\nscx_simple "),
        "{text}"
    );
}
