//! `runq run --ctprof DIR`: snapshots taken while the scenario's workers
//! run (right after they start, and just before the planned end), written
//! to DIR, and the compare of the run's own cgroups printed below the run
//! report.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use runq_ctprof::compare::compare;
use runq_ctprof::group::{GroupBy, Grouping};
use runq_ctprof::view::ViewOptions;
use runq_ctprof::{capture, save, CaptureOptions, CtprofSnapshot};
use runq_results::evidence::ctprof::{CtprofEvidence, Subject};
use runq_workload::{Placement, RunOutcome};

use crate::exit;

/// Captures snapshots from the run's progress ticks.
#[derive(Debug)]
pub struct Recorder {
    dir: PathBuf,
    before: Option<CtprofSnapshot>,
    after: Option<CtprofSnapshot>,
    /// When each snapshot was taken, from the run's start.
    at: [Duration; 2],
}

/// How close to the planned end the second snapshot is taken.
const END_MARGIN: Duration = Duration::from_millis(150);

impl Recorder {
    /// Checks that DIR exists (or creates it) before the run starts.
    pub fn new(dir: &Path) -> anyhow::Result<Self> {
        if dir.exists() && !dir.is_dir() {
            return Err(exit::usage(format!(
                "--ctprof {}: not a directory; give a directory for the snapshots",
                dir.display()
            )));
        }
        std::fs::create_dir_all(dir).map_err(|e| {
            exit::usage(format!(
                "--ctprof {}: cannot create the directory: {e}",
                dir.display()
            ))
        })?;
        Ok(Recorder {
            dir: dir.to_path_buf(),
            before: None,
            after: None,
            at: [Duration::ZERO; 2],
        })
    }

    fn snap() -> CtprofSnapshot {
        capture(&CaptureOptions::default())
    }

    /// Called on every run tick: the first tick takes the baseline, the
    /// first tick within [`END_MARGIN`] of the planned end the candidate.
    /// A baseline that took the run to its end (a capture on a busy host
    /// can outlast a short run) is followed by the candidate at once, in
    /// the same tick, while the workers still run: taken after the run,
    /// it would find them gone.
    pub fn tick(&mut self, elapsed: Duration, planned: Duration) {
        if self.before.is_none() {
            let t = Instant::now();
            self.before = Some(Self::snap());
            self.at[0] = elapsed;
            if elapsed + t.elapsed() + END_MARGIN >= planned {
                self.take_after(elapsed + t.elapsed());
            }
        } else if self.after.is_none() && elapsed + END_MARGIN >= planned {
            self.take_after(elapsed);
        }
    }

    fn take_after(&mut self, elapsed: Duration) {
        self.after = Some(Self::snap());
        self.at[1] = elapsed;
    }

    /// The compare of the `subjects`' threads between the two snapshots,
    /// for a FAIL's evidence; `None` until both are taken.
    pub fn around(&self, subjects: &[Subject]) -> Option<CtprofEvidence> {
        let (b, a) = (self.before.as_ref()?, self.after.as_ref()?);
        Some(CtprofEvidence {
            snapshots_s: self.at.map(|d| d.as_secs_f64()),
            threads: subjects
                .iter()
                .map(|&s| super::moment::thread_deltas(b, a, s))
                .collect(),
        })
    }

    /// Writes both snapshots and `compare.json`; returns the rendered
    /// compare of the run's cgroups (or a note when there is none).
    pub fn finish(mut self, outcome: &RunOutcome, color: bool) -> anyhow::Result<String> {
        let Some(before) = self.before.take() else {
            return Ok("ctprof: the run ended before its first tick; no snapshots taken\n".into());
        };
        let after = self.after.take().unwrap_or_else(Self::snap);
        let (bp, ap) = (
            self.dir.join("before.ctprof.zst"),
            self.dir.join("after.ctprof.zst"),
        );
        save(&before, &bp).context("writing the ctprof baseline")?;
        save(&after, &ap).context("writing the ctprof candidate")?;
        let (grouping, filter) = match &outcome.placement {
            Placement::Cgroups { run_id, .. } => (
                Grouping {
                    by: GroupBy::Cgroup,
                    ..Default::default()
                },
                Some(format!("/runq/{run_id}")),
            ),
            Placement::Unplaced { .. } => (Grouping::default(), None),
        };
        let opts = ViewOptions {
            grouping,
            ..Default::default()
        };
        let mut view = compare(&before, &after, &opts);
        if let Some(prefix) = &filter {
            view.rows.retain(|r| r.group.contains(prefix.as_str()));
        }
        let doc = runq_common::json::Stamped(&runq_ctprof::view::CompareDocument(&view));
        let compare_json = serde_json::to_vec_pretty(&doc)?;
        let replace = runq_common::safefile::Replace::OwnFile;
        runq_common::safefile::write_atomic(&self.dir.join("compare.json"), &compare_json, replace)
            .context("writing compare.json")?;
        let mut out = format!("\nctprof: wrote {} and {}\n", bp.display(), ap.display());
        match &filter {
            Some(p) => out.push_str(&format!("ctprof: compare of the run's cgroups ({p}/...), grouped by cgroup\n\n")),
            None => out.push_str("ctprof: workers ran without cgroups; compare of every process, grouped by pcomm\n\n"),
        }
        view.rows.retain(|r| {
            r.delta.is_some_and(|d| d != 0.0)
                || r.text_delta == Some(runq_ctprof::view::TextDelta::Differs)
        });
        out.push_str(&runq_ctprof::render::render(&view, true, &[], color));
        Ok(out)
    }
}
