//! `runq hud --unwind auto` chooses per object (root): runq-demo-service
//! built with the workspace's frame pointers still calls the system's
//! libz, which keeps none, so hud copies stacks and unwinds them by DWARF
//! instead of walking frame pointers that stop inside libz.

use super::hud::{blockers, demo_bin, hud, runq_bin, start_command, KillOnDrop, DEMO_LIFETIME};

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn auto_copies_stacks_when_a_library_keeps_no_frame_pointers() {
    let mut service = std::process::Command::new(demo_bin("runq-demo-service"));
    service.arg(DEMO_LIFETIME.to_string());
    let (child, pid) = start_command(service);
    let _service = KillOnDrop(child);
    let (report, _) = hud(&runq_bin(), pid, 3, &[]);
    let stacks = &report["stacks"];
    assert_eq!(stacks["source"], "dwarf", "{report:#}");
    let reason = stacks["reason"].as_str().unwrap();
    assert!(
        reason.contains("keeps frame pointers") && reason.contains("libz"),
        "{reason}"
    );
    let short = stacks["short"].as_u64().unwrap();
    assert!(
        short * 5 <= stacks["stacks"].as_u64().unwrap(),
        "{stacks:#}"
    );
    let libz = blockers(&report, "task_cpu_sampled")
        .into_iter()
        .find(|b| b["function"] == "runq_demo_service::checksum_archive")
        .unwrap_or_else(|| panic!("no CPU row for the zlib handler: {report:#}"));
    let below = libz["below"].as_object().unwrap();
    assert!(below.keys().any(|p| p.contains("libz.so")), "{libz:#}");
}
