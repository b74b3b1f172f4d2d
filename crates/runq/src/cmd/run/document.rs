//! The saved result of `runq run` (what `--json` prints and `--output`
//! writes): a versioned document with the host facts, the scenario, and
//! every repeat's figures, which `runq compare` reads back.

use std::path::Path;

use runq_workload::scheduler::SchedulerDeath;
use runq_workload::summary::percentile;
use runq_workload::{RunOutcome, Scenario, Verdict, WorkerReport};
use serde::{Deserialize, Serialize};

/// The version of the document's layout (2: verdicts and worker exits in
/// snake_case); `runq compare` reads this one and the ones before it, as
/// far as [`OLDEST_READ_VERSION`].
pub const SCHEMA_VERSION: u32 = 2;

/// The oldest layout `runq compare` still reads (what it reads, the host
/// and the repeats' figures, is the same in every version since).
pub const OLDEST_READ_VERSION: u32 = 1;

/// Marks the document as runq's (a file from another tool lacks it).
pub const TOOL: &str = "runq run";

/// Facts about the host that make two results comparable (or not).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    /// Host name.
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel_release: String,
    /// CPU model.
    pub cpu_model: String,
    /// Online CPUs.
    pub online_cpus: u32,
    /// `v2` (unified only), `hybrid` (controllers on v1, v2 mounted) or
    /// `v1`, or `none`.
    pub cgroup_layout: String,
    /// The sched_ext scheduler loaded (`root/ops`), or `none`/`no sched_ext`.
    pub sched_ext: String,
    /// The scheduler command runq started for the run, if any.
    pub scheduler_command: Option<String>,
    /// The clock the work loops timed with: `tsc` or `monotonic` (see
    /// `runq_kernel::clock::fast`; `RUNQ_CLOCK=monotonic` forces the latter).
    /// Empty in documents written before it was recorded.
    #[serde(default)]
    pub loop_clock: String,
}

impl HostFacts {
    /// Reads the live host's facts.
    pub fn read(scheduler_command: Option<String>) -> Self {
        let ctx = runq_kernel::host::read_host_context(Path::new("/proc"), Path::new("/sys"));
        let layout = match runq_kernel::cgroup::CgroupLayout::detect() {
            Ok(l) if l.hierarchies.is_empty() => "none",
            Ok(l) if l.hierarchies.iter().all(|h| h.is_v2()) => "v2",
            Ok(l) if l.hierarchies.iter().any(|h| h.is_v2()) => "hybrid",
            Ok(_) => "v1",
            Err(_) => "unknown",
        };
        let sched_ext = match runq_kernel::sched_ext::read_sched_ext(Path::new("/sys")) {
            None => "no sched_ext".to_string(),
            Some(s) => s
                .ops
                .filter(|o| !o.is_empty())
                .unwrap_or_else(|| format!("none ({})", s.state)),
        };
        HostFacts {
            hostname: ctx.hostname,
            kernel_release: ctx.kernel_release,
            cpu_model: ctx.cpu_model,
            online_cpus: ctx.online_cpus,
            cgroup_layout: layout.to_string(),
            sched_ext,
            scheduler_command,
            loop_clock: runq_kernel::clock::fast::init().name().to_string(),
        }
    }
}

/// Wake latency percentiles with schbench-style names, next to the number
/// of samples they were taken from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WakePercentiles {
    /// Median, ns.
    pub p50: Option<u64>,
    /// 90th percentile, ns.
    pub p90: Option<u64>,
    /// 99th percentile, ns.
    pub p99: Option<u64>,
    /// 99.9th percentile, ns.
    #[serde(rename = "p99.9")]
    pub p99_9: Option<u64>,
    /// Samples the percentiles were computed from (the reservoirs).
    pub samples: u64,
    /// Wakes observed, sampled or not.
    pub total: u64,
}

/// One group's figures in one repeat: what `runq compare` compares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupFigures {
    /// Group name.
    pub group: String,
    /// Work type name.
    pub work_type: String,
    /// Work units per second, summed over workers.
    pub work_rate_per_s: f64,
    /// Wake latency, ns.
    pub wake_latency_ns: WakePercentiles,
    /// Off-CPU share of wall time, percent.
    pub off_cpu_pct: f64,
    /// Worst gap between checkpoints, ms.
    pub max_gap_ms: u64,
    /// Migrations over all workers.
    pub migrations: u64,
    /// Jain's fairness index of the workers' CPU time (1 = equal shares,
    /// 1/n = one worker got everything); `None` below two workers.
    pub fairness: Option<f64>,
    /// Share of the workers' wall time spent runnable but waiting for a
    /// CPU (schedstat run delay), percent; `None` without schedstat data
    /// (and in files written before this figure existed).
    #[serde(default)]
    pub run_delay_pct: Option<f64>,
}

/// One repeat of the scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Repeat {
    /// 1-based repeat number.
    pub repeat: usize,
    /// That repeat's verdict.
    pub verdict: Verdict,
    /// Checks that failed in that repeat, as `group: check`.
    pub failed_checks: Vec<String>,
    /// Per-group figures.
    pub groups: Vec<GroupFigures>,
    /// How the scheduler under test died in that repeat, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler_death: Option<SchedulerDeath>,
}

/// The whole document. The last repeat's full outcome (summaries, checks,
/// every worker report) is flattened at the top level, as a single run's
/// `--json` always printed it; `verdict` there is the verdict over all
/// repeats.
#[derive(Debug, Serialize)]
pub struct RunDocument {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// [`TOOL`].
    pub tool: &'static str,
    /// The host the run happened on.
    pub host: HostFacts,
    /// The scenario as run (groups, work types, parameters, checks).
    pub scenario_spec: Scenario,
    /// Every repeat's figures.
    pub repeats: Vec<Repeat>,
    /// Across the repeats (with `--repeat` 2 or more): each group's median
    /// and range, each check's pass count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat_summary: Option<super::summary::RepeatSummary>,
    /// True when the worker reports keep their raw samples (`--raw`):
    /// the wake-latency and iteration-cost reservoirs, up to 100,000
    /// values each. Without it they are empty and the figures above
    /// summarize them.
    pub raw_samples: bool,
    /// The last repeat's outcome.
    #[serde(flatten)]
    pub last: RunOutcome,
}

/// Jain's index of `xs`: `(sum x)^2 / (n * sum x^2)`.
fn jain(xs: &[f64]) -> Option<f64> {
    let sq: f64 = xs.iter().map(|x| x * x).sum();
    (xs.len() >= 2 && sq > 0.0).then(|| {
        let s: f64 = xs.iter().sum();
        s * s / (xs.len() as f64 * sq)
    })
}

/// The figures of one group from its summary and its workers' reports.
fn group_figures(o: &RunOutcome, g: &runq_workload::summary::GroupSummary) -> GroupFigures {
    let live: Vec<&WorkerReport> = o
        .reports
        .iter()
        .filter(|r| r.group_idx == g.group_idx && r.exit_info.is_none())
        .collect();
    let mut wakes: Vec<u64> = live
        .iter()
        .flat_map(|r| r.resume_latencies_ns.iter().copied())
        .collect();
    wakes.sort_unstable();
    let cpu: Vec<f64> = live.iter().map(|r| r.cpu_time_ns as f64).collect();
    GroupFigures {
        group: g.name.clone(),
        work_type: g.work_type.clone(),
        work_rate_per_s: g.work_rate_per_s,
        wake_latency_ns: WakePercentiles {
            p50: percentile(&wakes, 50.0),
            p90: percentile(&wakes, 90.0),
            p99: percentile(&wakes, 99.0),
            p99_9: percentile(&wakes, 99.9),
            samples: wakes.len() as u64,
            total: g.wake_total,
        },
        off_cpu_pct: g.off_cpu_pct,
        max_gap_ms: g.max_gap_ms,
        migrations: g.migrations,
        fairness: jain(&cpu),
        run_delay_pct: run_delay_pct(&live),
    }
}

/// Summed schedstat run delay over summed wall time, percent; `None` when
/// no worker has schedstat data (no run was counted).
fn run_delay_pct(live: &[&WorkerReport]) -> Option<f64> {
    let wall: u64 = live.iter().map(|r| r.wall_time_ns).sum();
    if wall == 0 || live.iter().all(|r| r.schedstat_run_count == 0) {
        return None;
    }
    let delay: u64 = live.iter().map(|r| r.schedstat_run_delay_ns).sum();
    Some(delay as f64 * 100.0 / wall as f64)
}

/// The repeat record of one outcome.
pub fn repeat_of(n: usize, o: &RunOutcome) -> Repeat {
    Repeat {
        repeat: n,
        verdict: o.verdict,
        failed_checks: o
            .checks
            .iter()
            .filter(|c| !c.pass)
            .map(|c| format!("{}: {}", c.group, c.name))
            .collect(),
        groups: o.groups.iter().map(|g| group_figures(o, g)).collect(),
        scheduler_death: o.scheduler_death.clone(),
    }
}

/// Builds the document from every repeat's outcome (at least one).
pub fn build(scn: &Scenario, outcomes: Vec<RunOutcome>) -> RunDocument {
    let repeats: Vec<Repeat> = outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| repeat_of(i + 1, o))
        .collect();
    let mut last = outcomes.into_iter().last().expect("at least one repeat");
    if repeats.iter().any(|r| r.verdict == Verdict::Fail) {
        last.verdict = Verdict::Fail;
    }
    let checks: Vec<(String, String)> = last
        .checks
        .iter()
        .map(|c| (c.group.clone(), c.name.clone()))
        .collect();
    let repeat_summary = (repeats.len() > 1).then(|| super::summary::summarize(&repeats, &checks));
    RunDocument {
        schema_version: SCHEMA_VERSION,
        tool: TOOL,
        host: HostFacts::read(scn.scheduler.as_ref().map(|s| s.command.clone())),
        scenario_spec: scn.clone(),
        repeats,
        repeat_summary,
        raw_samples: true,
        last,
    }
}

impl RunDocument {
    /// Empties the worker reports' sample reservoirs (their summaries, the
    /// groups' percentiles, stay): a 3 s FutexPingPong run's document
    /// shrinks from about 3 MB to a few tens of KB.
    pub fn drop_raw_samples(&mut self) {
        for r in &mut self.last.reports {
            r.resume_latencies_ns = Vec::new();
            r.iteration_costs_ns = Vec::new();
        }
        self.raw_samples = false;
    }
}

/// Writes the document to `path` (pretty JSON), creating or truncating it.
pub fn write(doc: &RunDocument, path: &Path) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(doc)?;
    std::fs::write(path, text + "\n")
        .map_err(|e| crate::exit::run_error(format!("--output: writing {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index() {
        assert_eq!(jain(&[5.0, 5.0]), Some(1.0));
        assert_eq!(jain(&[1.0, 0.0]), Some(0.5));
        assert_eq!(jain(&[1.0]), None);
        assert_eq!(jain(&[0.0, 0.0]), None);
    }

    #[test]
    fn percentile_names_are_schbench_style() {
        let w = WakePercentiles {
            p99_9: Some(7),
            samples: 3,
            ..Default::default()
        };
        let v = serde_json::to_value(&w).unwrap();
        assert_eq!(v["p99.9"], 7);
        assert_eq!(v["samples"], 3);
        assert!(v.get("p50").is_some());
    }
}
