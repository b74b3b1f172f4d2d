//! The topology the guest saw, checked against the one asked for: the
//! guest's script lists every CPU's SMT siblings, last-level cache and
//! NUMA node, and every node's distances, from sysfs (`topology` in the
//! shared directory); [`GuestTopology::mismatch`] says where the guest
//! differs from the preset, so that a run never stands for a topology it
//! did not have.

use std::collections::BTreeSet;

use runq_kernel::cpulist::parse_cpu_list;

use crate::topology::{Topology, DEFAULT_REMOTE_DISTANCE};

/// The shell lines that write the guest's topology to `$1`: a line
/// `cpu N SIBLINGS LLC NODE` per CPU (`-` where sysfs has none) and a
/// line `node N DISTANCES…` per NUMA node.
pub const SCRIPT: &str = r#"for c in /sys/devices/system/cpu/cpu[0-9]*; do
  n=$(ls -d "$c"/node[0-9]* 2>/dev/null | head -n 1)
  echo "cpu ${c##*/cpu} $(cat "$c"/topology/thread_siblings_list 2>/dev/null || echo -) $(cat "$c"/cache/index3/shared_cpu_list 2>/dev/null || echo -) ${n:+${n##*/node}}"
done
for d in /sys/devices/system/node/node[0-9]*; do
  [ -r "$d/distance" ] && echo "node ${d##*/node} $(cat "$d/distance")"
done"#;

/// What the guest's sysfs showed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GuestTopology {
    /// Online CPUs.
    pub cpus: u32,
    /// NUMA nodes with CPUs (1 when sysfs shows none).
    pub numa_nodes: u32,
    /// Distinct last-level caches (`None` when the guest shows no L3).
    pub llcs: Option<u32>,
    /// The most SMT siblings of one CPU, itself included.
    pub threads_per_core: u32,
    /// Every distance between two different nodes.
    pub remote_distances: BTreeSet<u32>,
}

impl GuestTopology {
    /// Parses the lines [`SCRIPT`] wrote; `None` when they name no CPU.
    pub fn parse(text: &str) -> Option<Self> {
        let mut cpus = 0;
        let mut nodes = BTreeSet::new();
        let mut llcs = BTreeSet::new();
        let mut no_llc = false;
        let mut threads = 1;
        let mut distances = BTreeSet::new();
        for line in text.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                ["cpu", _, siblings, llc, rest @ ..] => {
                    cpus += 1;
                    if let Ok(set) = parse_cpu_list(siblings) {
                        threads = threads.max(set.len() as u32);
                    }
                    match parse_cpu_list(llc) {
                        Ok(set) => {
                            llcs.insert(set);
                        }
                        Err(_) => no_llc = true,
                    }
                    nodes.extend(rest.first().copied());
                }
                ["node", own, dists @ ..] => {
                    let own: usize = own.parse().unwrap_or(usize::MAX);
                    distances.extend(
                        dists
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| *i != own)
                            .filter_map(|(_, d)| d.parse::<u32>().ok()),
                    );
                }
                _ => {}
            }
        }
        (cpus > 0).then(|| GuestTopology {
            cpus,
            numa_nodes: nodes.len().max(1) as u32,
            llcs: (!no_llc).then_some(llcs.len() as u32),
            threads_per_core: threads,
            remote_distances: distances,
        })
    }

    /// Where the guest differs from `want`, in words; `None` when it
    /// matches.
    pub fn mismatch(&self, want: &Topology) -> Option<String> {
        let mut diffs = Vec::new();
        let mut differ = |what: &str, saw: String, asked: String| {
            if saw != asked {
                diffs.push(format!("{what} {saw} (asked {asked})"));
            }
        };
        differ("vCPUs", self.cpus.to_string(), want.cpus().to_string());
        differ(
            "NUMA nodes",
            self.numa_nodes.to_string(),
            want.nodes.to_string(),
        );
        if let Some(llcs) = self.llcs {
            differ(
                "LLCs",
                llcs.to_string(),
                (want.nodes * want.llcs).to_string(),
            );
        }
        differ(
            "threads per core",
            self.threads_per_core.to_string(),
            want.threads.to_string(),
        );
        if want.nodes > 1 {
            let asked = want.distance.unwrap_or(DEFAULT_REMOTE_DISTANCE);
            let saw: Vec<String> = self.remote_distances.iter().map(u32::to_string).collect();
            differ("node distances", saw.join(","), asked.to_string());
        }
        (!diffs.is_empty()).then(|| diffs.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a 6.1 guest of `2n2c1t31d` (`--cpus 4,sockets=2,cores=2`,
    /// two nodes at distance 31) wrote.
    const TWO_NODES: &str = "cpu 0 0 0-1 0\ncpu 1 1 0-1 0\ncpu 2 2 2-3 1\ncpu 3 3 2-3 1\n\
                             node 0 10 31\nnode 1 31 10\n";

    #[test]
    fn a_two_node_guest_matches_its_preset() {
        let g = GuestTopology::parse(TWO_NODES).unwrap();
        assert_eq!(
            (g.cpus, g.numa_nodes, g.llcs, g.threads_per_core),
            (4, 2, Some(2), 1)
        );
        assert_eq!(g.remote_distances, BTreeSet::from([31]));
        assert_eq!(g.mismatch(&Topology::parse("2n2c1t31d").unwrap()), None);
    }

    #[test]
    fn every_difference_is_named() {
        let g = GuestTopology::parse(TWO_NODES).unwrap();
        let why = g.mismatch(&Topology::parse("2n2l1c2t").unwrap()).unwrap();
        assert!(why.contains("vCPUs 4 (asked 8)"), "{why}");
        assert!(why.contains("LLCs 2 (asked 4)"), "{why}");
        assert!(why.contains("threads per core 1 (asked 2)"), "{why}");
        assert!(why.contains("node distances 31 (asked 20)"), "{why}");
    }

    #[test]
    fn smt_siblings_and_a_guest_without_l3_or_nodes() {
        let text = "cpu 0 0-1 - \ncpu 1 0-1 - \n";
        let g = GuestTopology::parse(text).unwrap();
        assert_eq!(
            (g.cpus, g.numa_nodes, g.llcs, g.threads_per_core),
            (2, 1, None, 2)
        );
        assert_eq!(g.mismatch(&Topology::parse("1c2t").unwrap()), None);
        assert_eq!(GuestTopology::parse("garbage\n"), None);
    }
}
