use std::fs;

use super::*;
use crate::cgroup::{Hierarchy, HierarchyKind};

/// A v1 cpu hierarchy in a temp dir: `cpu.rt_runtime_us` files as the
/// kernel keeps them with RT group scheduling (950000 at the root, 0 in a
/// new cgroup), runq running in `/user.slice` with `user_runtime`.
fn v1_tree(user_runtime: i64) -> (tempfile::TempDir, CgroupLayout) {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("cpu.rt_runtime_us"), "950000\n").unwrap();
    fs::create_dir(dir.path().join("user.slice")).unwrap();
    fs::write(
        dir.path().join("user.slice/cpu.rt_runtime_us"),
        format!("{user_runtime}\n"),
    )
    .unwrap();
    let layout = CgroupLayout {
        hierarchies: vec![Hierarchy {
            root: dir.path().to_path_buf(),
            kind: HierarchyKind::V1 {
                controller: "cpu".into(),
            },
        }],
    };
    (dir, layout)
}

const OWN: &str = "4:memory:/\n1:cpu,cpuacct:/user.slice\n0::/user.slice/s.scope\n";

fn facts(max_priority: u32) -> RtFacts {
    RtFacts {
        max_priority,
        v1_chain: None,
        v2_cpu: None,
    }
}

#[test]
fn root_gets_99_and_others_their_rlimit() {
    let status = "Name:\tx\nCapEff:\t000001ffffffffff\n";
    assert_eq!(cap_eff(status), Some(0x1ff_ffff_ffff));
    assert_eq!(max_priority(cap_eff(status), 0), 99);
    assert_eq!(max_priority(Some(0), 5), 5);
    assert_eq!(max_priority(None, 1000), 99);
}

#[test]
fn without_privilege_the_refusal_names_the_privilege() {
    let RtPlan::Refuse(why) = plan(&facts(0), 1, true) else {
        panic!("planned without privilege")
    };
    assert!(why.is_privilege());
    assert!(why.to_string().contains("ulimit -r 1"), "{why}");
}

#[test]
fn v1_rt_workers_stay_in_runqs_own_cpu_cgroup_when_it_has_runtime() {
    let (dir, layout) = v1_tree(100_000);
    let chain = v1_rt_chain(&layout, OWN).unwrap();
    assert_eq!(
        chain,
        vec![
            (dir.path().to_path_buf(), 950_000),
            (dir.path().join("user.slice"), 100_000)
        ]
    );
    let facts = RtFacts {
        v1_chain: Some(chain),
        ..facts(99)
    };
    assert_eq!(plan(&facts, 50, true), RtPlan::OutsideV1Cpu);
    assert_eq!(plan(&facts, 50, false), RtPlan::InGroup);
}

#[test]
fn v1_without_runtime_on_runqs_chain_is_refused_with_the_cgroup() {
    let (dir, layout) = v1_tree(0);
    let facts = RtFacts {
        v1_chain: v1_rt_chain(&layout, OWN),
        ..facts(99)
    };
    let RtPlan::Refuse(why) = plan(&facts, 1, false) else {
        panic!("planned in a cgroup without RT runtime")
    };
    assert!(!why.is_privilege());
    assert_eq!(why, RtRefusal::NoV1Runtime(dir.path().join("user.slice")));
    assert!(why.to_string().contains("cpu.rt_runtime_us 0"), "{why}");
}

#[test]
fn no_rt_group_scheduling_means_no_chain() {
    let (dir, layout) = v1_tree(0);
    fs::remove_file(dir.path().join("cpu.rt_runtime_us")).unwrap();
    assert_eq!(v1_rt_chain(&layout, OWN), None);
    assert_eq!(plan(&facts(99), 1, true), RtPlan::InGroup);
}

#[test]
fn eperm_as_root_below_a_v2_root_with_cpu_is_rt_group_scheduling() {
    let facts = RtFacts {
        v2_cpu: Some("/sys/fs/cgroup".into()),
        ..facts(99)
    };
    let eperm = io::Error::from_raw_os_error(libc::EPERM);
    let dir = Path::new("/sys/fs/cgroup/runq/1-2/rt");
    assert_eq!(
        refusal_after_probe(&facts, &eperm, dir),
        RtRefusal::V2GroupSched(dir.into())
    );
    let other = io::Error::from_raw_os_error(libc::EINVAL);
    assert!(matches!(
        refusal_after_probe(&facts, &other, dir),
        RtRefusal::Other { .. }
    ));
}

#[cfg_attr(not(runq_root), ignore = "needs root")]
#[test]
fn the_probe_reports_the_kernels_answer_in_runqs_own_cgroup() {
    let got = probe_fifo(1, |_| Ok(())).unwrap();
    // Root may still be refused (RT group scheduling where this test runs);
    // either way the answer is the kernel's, not a failure to probe.
    if let Err(e) = got {
        assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}");
    }
    let refused = probe_fifo(1, |_| Err(CgroupError::InvalidPath("not placed".into())));
    assert!(
        refused.is_err(),
        "an unplaced probe must not report an answer"
    );
}
