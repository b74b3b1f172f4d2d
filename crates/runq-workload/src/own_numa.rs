//! A worker's own NUMA figures at its end: pages per node and the host's
//! page migrations across nodes, read cheaply where the host has one node.
//!
//! Every worker reads them as it stops, so their cost sets how fast
//! thousands of stopped workers can report: numa_maps and vmstat took
//! 0.3-0.8 ms each per worker, and on 2 CPUs 4,000 interrupted workers
//! then needed seconds to report. On a host with one node both answers
//! are known without them: every resident page is on that node, and no
//! page can move to another.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::OnceLock;

use runq_kernel::{numa_maps, vmstat};

static NODES: OnceLock<BTreeSet<usize>> = OnceLock::new();

/// The host's online NUMA nodes, read once per process. The spawner
/// calls it before forking, so that workers inherit the answer.
pub(crate) fn host_nodes() -> &'static BTreeSet<usize> {
    NODES.get_or_init(|| runq_kernel::topology::numa_nodes(Path::new("/sys")))
}

/// The only node of a one-node host.
fn single_node() -> Option<usize> {
    let nodes = host_nodes();
    (nodes.len() == 1).then(|| nodes.first().copied()).flatten()
}

/// Pages of the calling process per NUMA node (empty when unknown).
pub(crate) fn own_pages_per_node() -> BTreeMap<usize, u64> {
    match single_node() {
        Some(node) => resident_pages(Path::new("/proc/self/statm"))
            .map(|pages| BTreeMap::from([(node, pages)]))
            .unwrap_or_default(),
        None => numa_maps::read_numa_maps(Path::new("/proc/self/numa_maps")).unwrap_or_default(),
    }
}

/// The host's `numa_pages_migrated` counter; 0 on a one-node host.
pub(crate) fn pages_migrated() -> u64 {
    match single_node() {
        Some(_) => 0,
        None => vmstat::numa_pages_migrated(),
    }
}

/// Resident pages from a statm file (its second field).
fn resident_pages(statm: &Path) -> Option<u64> {
    parse_resident(&std::fs::read_to_string(statm).ok()?)
}

fn parse_resident(text: &str) -> Option<u64> {
    text.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_is_statms_second_field() {
        assert_eq!(parse_resident("5120 1234 300 10 0 900 0\n"), Some(1234));
        assert_eq!(parse_resident("5120"), None);
        assert_eq!(parse_resident(""), None);
    }

    #[test]
    fn own_pages_are_counted_on_this_host() {
        // Every process has resident pages; a kernel without NUMA has no
        // numa_maps, and then the map is empty on a many-node host only.
        let pages = own_pages_per_node();
        if single_node().is_some() {
            assert_eq!(pages.len(), 1);
            assert!(pages.values().all(|&p| p > 0), "{pages:?}");
            assert_eq!(pages_migrated(), 0);
        }
    }
}
