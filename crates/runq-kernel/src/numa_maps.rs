//! `/proc/<pid>/numa_maps`: pages per NUMA node, summed over mappings.

use std::collections::BTreeMap;
use std::path::Path;

/// Sums the `N<node>=<pages>` tokens of every mapping in a numa_maps file.
/// Lines or tokens that do not parse are skipped.
pub fn parse_numa_maps(text: &str) -> BTreeMap<usize, u64> {
    let mut pages = BTreeMap::new();
    for token in text.split_ascii_whitespace() {
        let Some(rest) = token.strip_prefix('N') else {
            continue;
        };
        let Some((node, count)) = rest.split_once('=') else {
            continue;
        };
        if let (Ok(node), Ok(count)) = (node.parse::<usize>(), count.parse::<u64>()) {
            let slot = pages.entry(node).or_insert(0u64);
            *slot = slot.saturating_add(count);
        }
    }
    pages
}

/// Reads a numa_maps file; `None` when it is missing (kernel without NUMA).
pub fn read_numa_maps(path: &Path) -> Option<BTreeMap<usize, u64>> {
    Some(parse_numa_maps(&std::fs::read_to_string(path).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_per_node() {
        let text = "\
7f00 default file=/usr/lib/libc.so.6 mapped=40 mapmax=30 N0=40 kernelpagesize_kB=4
7f10 default anon=3 dirty=3 N0=2 N1=1 kernelpagesize_kB=4
7f20 interleave:0-1 anon=8 dirty=8 N0=4 N1=4 kernelpagesize_kB=4
";
        let pages = parse_numa_maps(text);
        assert_eq!(pages.get(&0), Some(&46));
        assert_eq!(pages.get(&1), Some(&5));
    }

    #[test]
    fn ignores_garbage() {
        assert!(parse_numa_maps("N=1 Nx=2 N0=y NN").is_empty());
    }
}
