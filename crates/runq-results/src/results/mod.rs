//! The saved result of a run (what `runq run --json` prints and
//! `--output` writes): a versioned document with the host facts, the
//! scenario, and every repeat's figures, which [`crate::compare`] reads
//! back.

mod figures;
mod host;
mod repeat_summary;

use std::path::{Path, PathBuf};

use serde::Serialize;

use runq_workload::scheduler::SchedulerDeath;
use runq_workload::{RunOutcome, Scenario, Verdict};

pub use figures::{GroupFigures, WakePercentiles};
pub use host::HostFacts;
pub use repeat_summary::{summarize, CheckTally, GroupSpread, RepeatSummary, Spread};

/// The oldest layout `runq compare` still reads (what it reads, the host
/// and the repeats' figures, is the same in every version since).
pub(crate) const OLDEST_READ_VERSION: u32 = 1;

/// One repeat of the scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Repeat {
    /// 1-based repeat number.
    pub repeat: usize,
    /// That repeat's verdict.
    pub verdict: Verdict,
    /// Checks that failed in that repeat, as `group: check`.
    pub failed_checks: Vec<String>,
    /// What each check measured in that repeat (its bound and verdict
    /// are the top level's and `repeat_summary`'s): a matrix's noise band.
    pub checks: Vec<RepeatCheck>,
    /// Per-group figures.
    pub groups: Vec<GroupFigures>,
    /// How the scheduler under test died in that repeat, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler_death: Option<SchedulerDeath>,
}

impl Repeat {
    /// The record of repeat `n` (1-based) from its outcome.
    pub fn of(n: usize, o: &RunOutcome) -> Self {
        Repeat {
            repeat: n,
            verdict: o.verdict,
            failed_checks: o
                .checks
                .iter()
                .filter(|c| !c.pass)
                .map(|c| format!("{}: {}", c.group, c.check))
                .collect(),
            checks: o.checks.iter().map(RepeatCheck::of).collect(),
            groups: o.groups.iter().map(GroupFigures::from).collect(),
            scheduler_death: o.scheduler_death.clone(),
        }
    }
}

/// One check's figure in one repeat.
#[derive(Debug, Clone, Serialize)]
pub struct RepeatCheck {
    /// The check.
    pub check: runq_workload::CheckId,
    /// The group it judged.
    pub group: String,
    /// What it measured.
    pub measured: f64,
}

impl RepeatCheck {
    /// The figure of one check result.
    fn of(c: &runq_workload::CheckResult) -> Self {
        RepeatCheck {
            check: c.check,
            group: c.group.clone(),
            measured: c.measured,
        }
    }
}

/// Whether the document keeps the workers' raw samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawSamples {
    /// Keep them (`--raw`): the wake-latency and iteration-cost
    /// reservoirs, up to 100,000 values each.
    Keep,
    /// Empty them; the groups' figures still summarize them.
    Drop,
}

/// The whole document. The last repeat's full outcome (summaries, checks,
/// every worker report) is flattened at the top level, as a single run's
/// `--json` always printed it; `verdict` there is the verdict over all
/// repeats.
#[derive(Debug, Serialize)]
pub struct RunDocument {
    /// The host the run happened on.
    pub host: HostFacts,
    /// The scenario as run (groups, work types, parameters, checks).
    pub scenario_spec: Scenario,
    /// Every repeat's figures.
    pub repeats: Vec<Repeat>,
    /// Across the repeats (with 2 or more): each group's median and
    /// range, each check's pass count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat_summary: Option<RepeatSummary>,
    /// True when the worker reports keep their raw samples
    /// ([`RawSamples::Keep`]): the wake-latency and iteration-cost
    /// reservoirs, up to 100,000 values each. Without it they are empty
    /// and the figures above summarize them.
    pub raw_samples: bool,
    /// The evidence of the last failed repeat's failed checks (the
    /// flight recorder's reading; set by the caller that recorded it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::evidence::EvidenceReport>,
    /// The last repeat's outcome.
    #[serde(flatten)]
    pub last: RunOutcome,
}

/// Why the document could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The document could not be encoded as JSON.
    #[error("encoding the document: {0}")]
    Encode(#[from] serde_json::Error),
    /// The file could not be written.
    #[error("writing {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// `tool` marks the document as runq's (a file from another tool lacks
/// it). The version of the layout (2: verdicts and worker exits in
/// snake_case); `runq compare` reads this one and the ones before it, as
/// far as [`OLDEST_READ_VERSION`].
impl runq_common::json::JsonDocument for RunDocument {
    const TOOL: &'static str = "runq run";
    const SCHEMA_VERSION: u32 = 2;
}

impl RunDocument {
    /// Builds the document from every repeat's outcome, reading the live
    /// host's facts. The verdict over all repeats FAILs when any did.
    ///
    /// # Panics
    ///
    /// When `outcomes` is empty (a run has at least one repeat).
    pub fn from_outcomes(scn: &Scenario, outcomes: Vec<RunOutcome>, raw: RawSamples) -> Self {
        let repeats: Vec<Repeat> = outcomes
            .iter()
            .enumerate()
            .map(|(i, o)| Repeat::of(i + 1, o))
            .collect();
        let mut last = outcomes.into_iter().last().expect("at least one repeat");
        if repeats.iter().any(|r| r.verdict == Verdict::Fail) {
            last.verdict = Verdict::Fail;
        } else if repeats.iter().any(|r| r.verdict == Verdict::Indeterminate) {
            last.verdict = Verdict::Indeterminate;
        }
        let checks: Vec<(String, String)> = last
            .checks
            .iter()
            .map(|c| (c.group.clone(), c.check.to_string()))
            .collect();
        let repeat_summary = (repeats.len() > 1).then(|| summarize(&repeats, &checks));
        let mut doc = RunDocument {
            host: HostFacts::read(scn.scheduler.as_ref().map(|s| s.command.clone())),
            scenario_spec: scn.clone(),
            repeats,
            repeat_summary,
            raw_samples: true,
            evidence: None,
            last,
        };
        if raw == RawSamples::Drop {
            doc.drop_raw_samples();
        }
        doc
    }

    /// Empties the worker reports' sample reservoirs (their summaries, the
    /// groups' percentiles, stay): a 3 s FutexPingPong run's document
    /// shrinks from about 3 MB to a few tens of KB.
    fn drop_raw_samples(&mut self) {
        for r in &mut self.last.reports {
            r.resume_latencies_ns = Vec::new();
            r.request_latencies_ns = Vec::new();
            r.iteration_costs_ns = Vec::new();
        }
        self.raw_samples = false;
    }

    /// The document as pretty JSON (what `--json` prints).
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        runq_common::json::to_pretty(self)
    }

    /// Writes the document to `path` (pretty JSON and a newline) through
    /// `runq_common::safefile`: a new file or one of ours replaced whole,
    /// never through a symlink.
    pub fn write(&self, path: &Path) -> Result<(), WriteError> {
        let text = self.to_json()? + "\n";
        let replace = runq_common::safefile::Replace::OwnFile;
        runq_common::safefile::write_atomic(path, text.as_bytes(), replace).map_err(|source| {
            WriteError::Io {
                path: path.to_path_buf(),
                source,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runq_workload::summarize_group;
    use runq_workload::CheckId;
    use runq_workload::Placement;
    use runq_workload::{CheckResult, WakeFigure, WorkerReport};

    /// An outcome of one group `g` whose worker sampled `wakes`, judged
    /// `verdict` by one check.
    fn outcome(verdict: Verdict, wakes: Vec<u64>) -> RunOutcome {
        let reports = vec![WorkerReport {
            wall_time_ns: 1_000_000_000,
            work_units: 10,
            resume_latencies_ns: wakes,
            iteration_costs_ns: vec![1, 2],
            ..Default::default()
        }];
        let check = CheckResult {
            check: CheckId::MaxGapMs,
            group: "g".into(),
            measured: 1.0,
            op: runq_workload::Op::AtMost,
            bound: 2.0,
            pass: verdict == Verdict::Pass,
            cause: None,
            detail: Vec::new(),
            not_judged: None,
        };
        RunOutcome {
            scenario: "s".into(),
            placement: Placement::Unplaced {
                reason: "test".into(),
            },
            interrupted: false,
            spawn_ns: 0,
            run_ns: 0,
            collect_ns: 0,
            stale_cgroups_removed: 0,
            scheduler: None,
            scheduler_death: None,
            run_error: None,
            groups: vec![summarize_group(
                0,
                "g",
                "PipeIo",
                WakeFigure::Latency,
                &reports,
            )],
            checks: vec![check],
            skipped_checks: Vec::new(),
            series: None,
            host_load: None,
            recorded: Err("no recorder in this test".into()),
            recorder: Default::default(),
            verdict,
            reports,
        }
    }

    #[test]
    fn a_failed_repeat_fails_the_document_and_raw_samples_go() {
        let scn = runq_workload::Scenario::default_scenario();
        let outcomes = vec![
            outcome(Verdict::Fail, vec![5]),
            outcome(Verdict::Pass, vec![7, 9]),
        ];
        let doc = RunDocument::from_outcomes(&scn, outcomes, RawSamples::Drop);
        assert_eq!(
            doc.last.verdict,
            Verdict::Fail,
            "the verdict over the repeats"
        );
        assert_eq!(doc.repeats[0].failed_checks, ["g: max_gap_ms"]);
        assert_eq!(doc.repeats[1].groups[0].wake_latency_ns.p50, Some(7));
        assert_eq!(doc.repeat_summary.as_ref().unwrap().checks[0].passed, 1);
        assert!(!doc.raw_samples);
        let r = &doc.last.reports[0];
        assert!(r.resume_latencies_ns.is_empty() && r.iteration_costs_ns.is_empty());
        let kept = RunDocument::from_outcomes(
            &scn,
            vec![outcome(Verdict::Pass, vec![7])],
            RawSamples::Keep,
        );
        assert!(kept.raw_samples && kept.repeat_summary.is_none());
        assert_eq!(kept.last.reports[0].resume_latencies_ns, [7]);
    }
}
