//! The ready-made scenarios (`runq run --list-scenarios`, `runq run
//! NAME`): TOML files in `scenarios/catalog/`, embedded in the binary and
//! fitted to the host before they are parsed. A file's first line is its
//! one-line summary; placeholders stand for what depends on the host:
//!
//! | placeholder | value |
//! |---|---|
//! | `{ncpu}`, `{ncpu_x2}`, `{ncpu_x4}` | online CPUs, twice, four times |
//! | `{ncpu_even}` | online CPUs rounded up to an even count (pairs) |
//! | `{cpus}`, `{cpus_half}`, `{cpu_first}` | every online CPU, the first half (at least one), the first |
//! | `{cpus_second_half}`, `{cpu_last}` | the CPUs after the first half (the only CPU on a host with one), the last |
//! | `{llc_first}`, `{llc_last}` | the CPUs of the first and last last-level cache |
//! | `{llc_first_ncpu}`, `{llc_last_ncpu}` | how many CPUs those are |

use std::collections::BTreeSet;
use std::path::Path;

use runq_kernel::cpulist::{parse_cpu_list, CpuListDisplay};

use crate::scenario::Scenario;
use crate::scenario_file::{parse_scenario, ScenarioFileError};

/// One ready-made scenario.
#[derive(Debug, Clone, Copy)]
pub struct CatalogScenario {
    /// Its name (`runq run NAME`).
    pub name: &'static str,
    /// Its TOML, with placeholders.
    pub text: &'static str,
}

impl CatalogScenario {
    /// What it exposes, in one line (the file's first comment).
    pub fn summary(&self) -> &'static str {
        self.text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# "))
            .unwrap_or("")
    }

    /// Its TOML fitted to `host` (every placeholder replaced).
    pub fn fitted(&self, host: &HostShape) -> String {
        host.placeholders()
            .iter()
            .fold(self.text.to_string(), |text, (key, value)| {
                text.replace(&format!("{{{key}}}"), value)
            })
    }

    /// The scenario, fitted to `host` and parsed.
    pub fn scenario(&self, host: &HostShape) -> Result<Scenario, ScenarioFileError> {
        let path = format!("catalog/{}.toml", self.name);
        parse_scenario(Path::new(&path), &self.fitted(host))
    }
}

macro_rules! catalog {
    ($($name:literal),* $(,)?) => {
        &[$(CatalogScenario {
            name: $name,
            text: include_str!(concat!("../../../scenarios/catalog/", $name, ".toml")),
        }),*]
    };
}

/// Every ready-made scenario: ktstr's catalog adapted to TOML, then
/// runq's own.
pub const CATALOG: &[CatalogScenario] = catalog![
    "steady",
    "steady_llc",
    "oversubscribed",
    "cpuset_apply",
    "cpuset_clear",
    "cpuset_resize",
    "cgroup_add",
    "cgroup_remove",
    "affinity_change",
    "affinity_pinned",
    "host_contention",
    "mixed_workloads",
    "nested_steady",
    "nested_task_move",
    "timer_latency_under_load",
    "wake_chain_contended",
    "priority_inversion",
    "sched_ext_opt_in",
    // ktstr's custom scenario shapes (cpuset, nested, dynamic,
    // interaction, stress, affinity, performance), written for runq.
    "cpuset_disjoint",
    "cpuset_overlap",
    "cpuset_swap",
    "cpuset_nested_narrowing",
    "cpuset_single_cpu_crowd",
    "cpuset_wake_isolated",
    "cpuset_irq_isolated",
    "nested_weights",
    "nested_deep",
    "nested_siblings_mixed",
    "nested_churn_groups",
    "nested_weight_inversion",
    "dynamic_add_many",
    "dynamic_remove_many",
    "dynamic_add_remove_cycle",
    "dynamic_weight_shift",
    "dynamic_cpu_max_toggle",
    "dynamic_cpuset_grow",
    "interaction_pipe_chain_vs_spin",
    "interaction_net_vs_spin",
    "interaction_irq_vs_batch",
    "interaction_io_vs_cpu",
    "interaction_fanout_vs_yield",
    "interaction_nice_split",
    "stress_fork_exit",
    "stress_attach_storm",
    "stress_cgroup_churn_fast",
    "stress_oversubscribed_mixed",
    "stress_page_faults",
    "stress_udp_stream",
    "affinity_churn_vs_pinned",
    "affinity_random_subsets",
    "affinity_cross_churn",
    "perf_throughput_even",
    "perf_wake_chain_modes",
    "perf_net_tcp_stream",
    "perf_numa_cross",
];

/// The ready-made scenario `name`.
pub fn find(name: &str) -> Option<&'static CatalogScenario> {
    CATALOG.iter().find(|c| c.name == name)
}

/// What the catalog's placeholders need to know of the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostShape {
    /// Online CPUs.
    pub cpus: BTreeSet<usize>,
    /// The CPUs of each last-level cache, in order of their first CPU.
    pub llcs: Vec<BTreeSet<usize>>,
}

impl HostShape {
    /// The live host's shape, from `/sys` (one LLC holding every CPU when
    /// sysfs does not say).
    pub fn read(sys_root: &Path) -> Self {
        let cpus = runq_kernel::cpulist::online_cpus();
        let llcs = last_level_caches(sys_root, &cpus);
        HostShape { cpus, llcs }
    }

    fn placeholders(&self) -> Vec<(&'static str, String)> {
        let n = self.cpus.len().max(1);
        let list = |s: &BTreeSet<usize>| CpuListDisplay(s).to_string();
        let half: BTreeSet<usize> = self.cpus.iter().copied().take(n.div_ceil(2)).collect();
        let first: BTreeSet<usize> = self.cpus.iter().copied().take(1).collect();
        let last: BTreeSet<usize> = self.cpus.iter().copied().next_back().into_iter().collect();
        let rest: BTreeSet<usize> = self.cpus.difference(&half).copied().collect();
        let second_half = if rest.is_empty() { last.clone() } else { rest };
        let all = vec![self.cpus.clone()];
        let llcs = if self.llcs.is_empty() {
            &all
        } else {
            &self.llcs
        };
        let (llc_first, llc_last) = (&llcs[0], &llcs[llcs.len() - 1]);
        vec![
            ("ncpu", n.to_string()),
            ("ncpu_x2", (2 * n).to_string()),
            ("ncpu_x4", (4 * n).to_string()),
            ("ncpu_even", (n + n % 2).to_string()),
            ("cpus", list(&self.cpus)),
            ("cpus_half", list(&half)),
            ("cpu_first", list(&first)),
            ("cpus_second_half", list(&second_half)),
            ("cpu_last", list(&last)),
            ("llc_first", list(llc_first)),
            ("llc_last", list(llc_last)),
            ("llc_first_ncpu", llc_first.len().to_string()),
            ("llc_last_ncpu", llc_last.len().to_string()),
        ]
    }
}

/// The distinct CPU sets that share a cache of the highest level each
/// online CPU has (`cpuN/cache/index*/level` and `shared_cpu_list`).
fn last_level_caches(sys_root: &Path, cpus: &BTreeSet<usize>) -> Vec<BTreeSet<usize>> {
    let mut sets: Vec<BTreeSet<usize>> = Vec::new();
    for cpu in cpus {
        let dir = sys_root.join(format!("devices/system/cpu/cpu{cpu}/cache"));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let best = entries
            .flatten()
            .filter_map(|e| {
                let level: u32 = std::fs::read_to_string(e.path().join("level"))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()?;
                let shared = std::fs::read_to_string(e.path().join("shared_cpu_list")).ok()?;
                Some((level, parse_cpu_list(shared.trim()).ok()?))
            })
            .max_by_key(|(level, _)| *level);
        if let Some((_, set)) = best {
            let set: BTreeSet<usize> = set.intersection(cpus).copied().collect();
            if !set.is_empty() && !sets.contains(&set) {
                sets.push(set);
            }
        }
    }
    sets.sort_by_key(|s| s.first().copied());
    sets
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first `{name}` placeholder left in `text`.
    fn unfilled(text: &str) -> Option<&str> {
        text.match_indices('{').find_map(|(at, _)| {
            let rest = &text[at + 1..];
            let end = rest.find('}')?;
            let word = &rest[..end];
            (!word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
                .then_some(word)
        })
    }

    fn shape(n: usize, llcs: &[&[usize]]) -> HostShape {
        HostShape {
            cpus: (0..n).collect(),
            llcs: llcs.iter().map(|l| l.iter().copied().collect()).collect(),
        }
    }

    #[test]
    fn every_scenario_fits_a_large_host() {
        let host = shape(64, &[&[0, 1], &[62, 63]]);
        for c in CATALOG {
            assert!(!c.summary().is_empty(), "{} has no summary line", c.name);
            assert_eq!(unfilled(&c.fitted(&host)), None, "{}", c.name);
        }
    }

    /// Parsing checks cpusets against the CPUs online here, so the hosts
    /// are this one and its first CPU alone.
    #[test]
    fn every_scenario_parses_on_this_host_and_on_one_cpu() {
        let live = HostShape::read(Path::new("/sys"));
        let first = *live.cpus.first().unwrap();
        let one = HostShape {
            cpus: BTreeSet::from([first]),
            llcs: Vec::new(),
        };
        for host in [live, one] {
            for c in CATALOG {
                assert_eq!(unfilled(&c.fitted(&host)), None, "{}", c.name);
                let scn = c
                    .scenario(&host)
                    .unwrap_or_else(|e| panic!("{} on {} CPUs: {e}", c.name, host.cpus.len()));
                assert_eq!(scn.name, c.name);
                scn.validate().unwrap_or_else(|e| panic!("{}: {e}", c.name));
            }
        }
    }

    #[test]
    fn placeholders_follow_the_host() {
        let host = shape(3, &[&[0, 1], &[2]]);
        let text = find("steady_llc").unwrap().fitted(&host);
        assert!(
            text.contains("cpuset = \"0-1\"") && text.contains("cpuset = \"2\""),
            "{text}"
        );
        let pairs = find("oversubscribed").unwrap().fitted(&host);
        assert!(
            pairs.contains("workers = 12") && pairs.contains("workers = 4"),
            "{pairs}"
        );
    }

    #[test]
    fn the_halves_split_the_cpus_and_a_lone_cpu_is_both() {
        let text = "{cpus_half}|{cpus_second_half}|{cpu_last}";
        let fit = |host: &HostShape| {
            host.placeholders()
                .iter()
                .fold(text.to_string(), |t, (k, v)| {
                    t.replace(&format!("{{{k}}}"), v)
                })
        };
        assert_eq!(fit(&shape(5, &[])), "0-2|3-4|4");
        assert_eq!(fit(&shape(2, &[])), "0|1|1");
        assert_eq!(fit(&shape(1, &[])), "0|0|0");
    }

    #[test]
    fn the_catalog_has_ktstrs_scenarios_and_unique_names() {
        for name in [
            "steady",
            "steady_llc",
            "oversubscribed",
            "cpuset_apply",
            "cpuset_clear",
            "cpuset_resize",
            "cgroup_add",
            "cgroup_remove",
            "affinity_change",
            "affinity_pinned",
            "host_contention",
            "mixed_workloads",
            "nested_steady",
            "nested_task_move",
        ] {
            assert!(find(name).is_some(), "{name}");
        }
        let names: BTreeSet<&str> = CATALOG.iter().map(|c| c.name).collect();
        assert_eq!(names.len(), CATALOG.len());
    }

    #[test]
    fn the_live_hosts_llcs_cover_only_online_cpus() {
        let host = HostShape::read(Path::new("/sys"));
        for l in &host.llcs {
            assert!(l.is_subset(&host.cpus), "{l:?}");
        }
    }
}
