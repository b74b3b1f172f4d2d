//! CPU topology from sysfs: SMT sibling sets and NUMA nodes, for work
//! types that need them (and say so on a host without them).

use std::collections::BTreeSet;
use std::path::Path;

use crate::cpulist::parse_cpu_list;

/// The sets of online CPUs that share a core (two or more hardware
/// threads), from each CPU's `topology/thread_siblings_list`. Empty on a
/// host without SMT or with SMT switched off.
pub fn smt_sibling_sets(sys_root: &Path, online: &BTreeSet<usize>) -> Vec<BTreeSet<usize>> {
    let mut sets: Vec<BTreeSet<usize>> = Vec::new();
    for cpu in online {
        let file = sys_root.join(format!(
            "devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
        ));
        let Some(set) = read_list(&file) else {
            continue;
        };
        let set: BTreeSet<usize> = set.intersection(online).copied().collect();
        if set.len() > 1 && !sets.contains(&set) {
            sets.push(set);
        }
    }
    sets
}

/// The online NUMA nodes, from `devices/system/node/online`; node 0 alone
/// when the kernel has no NUMA support (no such file).
pub fn numa_nodes(sys_root: &Path) -> BTreeSet<usize> {
    read_list(&sys_root.join("devices/system/node/online")).unwrap_or_else(|| [0].into())
}

/// The CPUs of one NUMA node (`devices/system/node/nodeN/cpulist`).
pub fn node_cpus(sys_root: &Path, node: usize) -> BTreeSet<usize> {
    read_list(&sys_root.join(format!("devices/system/node/node{node}/cpulist"))).unwrap_or_default()
}

fn read_list(file: &Path) -> Option<BTreeSet<usize>> {
    parse_cpu_list(std::fs::read_to_string(file).ok()?.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn siblings_are_grouped_once_and_single_threads_are_not_smt() {
        let dir = tempfile::tempdir().unwrap();
        for (cpu, list) in [(0, "0,2"), (1, "1,3"), (2, "0,2"), (3, "1,3"), (4, "4")] {
            let rel = format!("devices/system/cpu/cpu{cpu}/topology/thread_siblings_list");
            write(dir.path(), &rel, &format!("{list}\n"));
        }
        let online: BTreeSet<usize> = (0..5).collect();
        let sets = smt_sibling_sets(dir.path(), &online);
        assert_eq!(sets, vec![[0, 2].into(), [1, 3].into()]);
        // A sibling offline leaves its core without a pair.
        let online: BTreeSet<usize> = [0, 1, 3, 4].into();
        assert_eq!(smt_sibling_sets(dir.path(), &online), vec![[1, 3].into()]);
    }

    #[test]
    fn nodes_come_from_sysfs_or_default_to_node_zero() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(numa_nodes(dir.path()), [0].into());
        write(dir.path(), "devices/system/node/online", "0-1\n");
        write(dir.path(), "devices/system/node/node1/cpulist", "4-7\n");
        assert_eq!(numa_nodes(dir.path()), [0, 1].into());
        assert_eq!(node_cpus(dir.path(), 1), (4..8).collect());
    }
}
