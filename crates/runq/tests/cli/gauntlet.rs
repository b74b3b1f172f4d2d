//! The gauntlet: the whole catalog and every work type on each kernel ×
//! topology, judged as the VM tier judges (a verdict or a skip with its
//! reason, setup applied, every worker ran, nothing left behind, the
//! guest's topology the one asked for). One guest per part, a part being
//! (kernel, topology, the catalog or the work types); shard K of N
//! (`RUNQ_GAUNTLET_SHARD=K/N`) runs the parts `runq run --vm-matrix
//! --shard` would give it (runq_vm::shard's rule over the parts' ids), so
//! N machines cover the gauntlet once. Prints a line per run and the
//! shard's wall time.
//!
//! `RUNQ_GAUNTLET_KERNELS`: kernel images, comma-separated (default: the
//! first in /boot); `RUNQ_GAUNTLET_TOPOLOGIES` (default `1n2c2t,2n1c1t,
//! 1n2l1c1t,1n2c1t`: SMT, 2 NUMA nodes, 2 LLCs, 1 node);
//! `RUNQ_GAUNTLET_JOBS`: guests at once (default 1; each takes one host
//! CPU under single-threaded TCG).

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use runq_vm::shard::Shard;

use crate::tier_guest::{judge_all, names, TierGuest, TierRun};

/// One guest of the gauntlet.
struct Part {
    kernel: PathBuf,
    topology: String,
    /// `catalog` or `types`.
    what: &'static str,
}

impl Part {
    /// Its id for sharding: `what/topology/kernel file name`.
    fn id(&self) -> String {
        let k = self
            .kernel
            .file_name()
            .unwrap_or_default()
            .to_string_lossy();
        format!("{}/{}/{k}", self.what, self.topology)
    }
}

/// The environment variable `name` as a comma-separated list, or `default`.
fn list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Every part of the gauntlet, in id order.
fn parts() -> Vec<Part> {
    let first_in_boot = std::fs::read_dir("/boot")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().to_string_lossy().into_owned())
        .find(|p| p.contains("vmlinuz-"))
        .unwrap_or_default();
    let mut parts = Vec::new();
    for kernel in list("RUNQ_GAUNTLET_KERNELS", &first_in_boot) {
        for topology in list("RUNQ_GAUNTLET_TOPOLOGIES", "1n2c2t,2n1c1t,1n2l1c1t,1n2c1t") {
            for what in ["catalog", "types"] {
                parts.push(Part {
                    kernel: PathBuf::from(&kernel),
                    topology: topology.clone(),
                    what,
                });
            }
        }
    }
    parts.sort_by_key(Part::id);
    parts
}

/// Runs one part in its guest; its problems.
fn run_part(part: &Part, scenarios: &[String], types: &[String]) -> Vec<String> {
    let runs: Vec<TierRun> = match part.what {
        "catalog" => scenarios.iter().map(|s| TierRun::scenario(s)).collect(),
        _ => types.iter().map(|t| TierRun::work_type(t)).collect(),
    };
    let label = format!("gauntlet {}", part.id());
    let guest = TierGuest {
        label: label.clone(),
        kernel: part.kernel.clone(),
        topology: part.topology.clone(),
        run_args: Vec::new(),
        limit: Duration::from_secs(20 * 60),
    };
    let out = guest.run(&runs);
    judge_all(&label, &out, &runs)
        .into_iter()
        .map(|p| format!("{}: {p}", part.id()))
        .collect()
}

#[test]
#[ignore = "gauntlet: the catalog and every work type × kernels × topologies, one TCG guest per \
            part (about 8 min each on 2 cores); RUNQ_GAUNTLET_KERNELS, _TOPOLOGIES, _SHARD=K/N, \
            _JOBS: cargo test -p runq --test cli -- --ignored --nocapture gauntlet::"]
fn gauntlet_every_scenario_and_work_type_per_kernel_and_topology() {
    let shard = std::env::var("RUNQ_GAUNTLET_SHARD")
        .map(|s| Shard::parse(&s).expect("RUNQ_GAUNTLET_SHARD: K/N"))
        .unwrap_or_else(|_| Shard::parse("1/1").unwrap());
    let all = parts();
    let mine: Vec<&Part> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| shard.holds(*i))
        .map(|(_, p)| p)
        .collect();
    let jobs: usize = std::env::var("RUNQ_GAUNTLET_JOBS").map_or(1, |j| j.parse().unwrap());
    let scenarios = names(&["run", "--list-scenarios"], "scenarios");
    let types = names(&["run", "--list"], "work_types");
    let t0 = Instant::now();
    let queue = Mutex::new(mine.iter());
    let problems = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| {
                while let Some(part) = { queue.lock().unwrap().next() } {
                    let found = run_part(part, &scenarios, &types);
                    problems.lock().unwrap().extend(found);
                }
            });
        }
    });
    println!(
        "gauntlet: shard {shard}: {} of {} parts in {:.0} s",
        mine.len(),
        all.len(),
        t0.elapsed().as_secs_f64()
    );
    let problems = problems.into_inner().unwrap();
    assert!(problems.is_empty(), "gauntlet:\n{}", problems.join("\n"));
}
