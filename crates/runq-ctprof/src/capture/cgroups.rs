//! Per-cgroup enrichment of a capture: one [`CgroupStats`] for every v2
//! cgroup path a captured thread is in, with v1 fallbacks on hybrid hosts.

use std::collections::BTreeMap;
use std::path::Path;

use runq_kernel::cgroup_stats::{read_cgroup_stats, CgroupRoots, CgroupStats};
use runq_kernel::proc::parse_task_cgroup;

use crate::model::ThreadState;

/// Reads stats for each distinct cgroup of `threads`. The v1 paths come from
/// one representative thread of each v2 cgroup.
pub fn enrich(threads: &[ThreadState], proc_root: &Path) -> BTreeMap<String, CgroupStats> {
    let roots = CgroupRoots::detect();
    let mut reps: BTreeMap<&str, (u32, u32)> = BTreeMap::new();
    for t in threads {
        reps.entry(t.cgroup.as_str()).or_insert((t.tgid, t.tid));
    }
    reps.into_iter()
        .filter(|(path, _)| !path.is_empty())
        .map(|(path, (tgid, tid))| {
            let file = proc_root.join(format!("{tgid}/task/{tid}/cgroup"));
            let v1 = std::fs::read(file)
                .map(|b| parse_task_cgroup(&b).v1)
                .unwrap_or_default();
            (path.to_string(), read_cgroup_stats(&roots, path, &v1))
        })
        .collect()
}
