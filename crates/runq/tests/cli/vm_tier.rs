//! The VM tier: every catalog scenario and every work type, once each, in
//! cgroup-v2 VMs (the catalog in one, the work types in another) with 2
//! NUMA nodes of 2 cores of 2 threads (2n2c2t, 8 vCPUs; virtme-ng,
//! single-threaded TCG), runq run from a copy in the guest's memory.
//! Software emulation is no scheduler's speed, so only what does not
//! depend on it is judged: a verdict was
//! reached (or the run was skipped, exit 77, with its reason), the group
//! setup applied, every worker ran and reported, and nothing was left
//! behind (no runq cgroup, no runq process). Every run's verdict and
//! failed checks are printed as `vm-tier:` lines. `RUNQ_TIER_KERNEL`
//! names another kernel image to boot.

use std::path::PathBuf;
use std::time::Duration;

use crate::tier_guest::{judge_all, names, TierGuest, TierRun};

/// The kernel image `RUNQ_TIER_KERNEL` names (a Debian image of runq's
/// kernel cache, say, with its modules beside it), else the first in
/// /boot.
fn kernel() -> PathBuf {
    if let Some(image) = std::env::var_os("RUNQ_TIER_KERNEL") {
        return PathBuf::from(image);
    }
    std::fs::read_dir("/boot")
        .expect("/boot")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("vmlinuz-"))
        .expect("the vm tier needs a kernel image in /boot (apt-get install linux-image-amd64)")
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
    let catalog: Vec<TierRun> = scenarios.iter().map(|s| TierRun::scenario(s)).collect();
    let mut problems = tier_guest(&catalog);
    let types: Vec<TierRun> = types.iter().map(|t| TierRun::work_type(t)).collect();
    problems.extend(tier_guest(&types));
    assert!(problems.is_empty(), "vm tier:\n{}", problems.join("\n"));
}

/// Runs `runs` in one tier guest (2 NUMA nodes × 2 cores × 2 threads)
/// and says what went wrong: runs without a verdict, setup not applied,
/// cgroups or processes left behind.
fn tier_guest(runs: &[TierRun]) -> Vec<String> {
    let guest = TierGuest {
        label: "vm-tier".into(),
        kernel: kernel(),
        topology: "2n2c2t".into(),
        run_args: Vec::new(),
        limit: Duration::from_secs(15 * 60),
    };
    let out = guest.run(runs);
    judge_all("vm-tier", &out, runs)
}
