//! The run's flight recorder (runq-kernel's `sched_trace`: a tracefs
//! instance of its own recording the scheduler events of the run's CPUs
//! into a fixed buffer per CPU): started before the run and stopped after
//! it; after a FAIL, runq-results' `evidence::flight` examines the
//! recording (a sentence in the report and a Chrome/Perfetto trace file
//! per check).

use std::collections::{BTreeSet, HashSet};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use runq_kernel::sched_trace::Recorder;
use runq_results::evidence::ctprof::Subject;
use runq_results::evidence::flight::{self, Flown};
use runq_results::evidence::EvidenceReport;
use runq_workload::{Freeze, RunOutcome, Scenario, Verdict};

use crate::cmd::ctprof::run_hook::Recorder as CtprofHook;

/// One run's recorder, or why there is none, and the run's start on its
/// clock (CLOCK_MONOTONIC, ns), learnt from the first tick.
pub struct Flight {
    /// The recorder's `tracing_on`, held open for the workers' freeze;
    /// closed before the recorder goes (its instance cannot be removed
    /// while a file in it is open), hence first.
    trigger: Option<std::fs::File>,
    /// The recorder and the CPUs it records, or why there is none.
    recorder: Result<(Recorder, Vec<u32>), String>,
    base_ns: Option<u64>,
    own: HashSet<i32>,
}

impl Flight {
    /// Starts recording into `mib_per_cpu` MiB per CPU, when given, on
    /// the CPUs `pinned` (the workers' when every group is pinned:
    /// [`Scenario::pinned_cpus`]) or on every online CPU; otherwise notes
    /// why not.
    pub fn start(mib_per_cpu: Option<u32>, pinned: Option<BTreeSet<usize>>) -> Flight {
        let recorder = match mib_per_cpu {
            Some(mib) => {
                let cpus = pinned
                    .unwrap_or_else(|| runq_kernel::cpulist::online_cpus().into_iter().collect());
                let cpus: Vec<u32> = cpus.iter().filter_map(|&c| u32::try_from(c).ok()).collect();
                Recorder::start(&cpus, u64::from(mib) * 1024)
                    .map(|r| (r, cpus))
                    .map_err(|e| e.to_string())
            }
            None => Err(
                "the flight recorder is off (pass --flight-recorder to record the \
                 scheduler's events; about 0.45 µs each)"
                    .into(),
            ),
        };
        Flight {
            trigger: None,
            recorder,
            base_ns: None,
            own: HashSet::new(),
        }
    }

    /// The stop-on-threshold trigger for `scn`'s run, when the recorder
    /// runs, `on`, and the scenario bounds gaps or stalls: the first gap
    /// beyond `max_gap_ms`, or the first stall past a `stall` check's
    /// bound, freezes the recording.
    pub fn freeze(&mut self, scn: &Scenario, on: bool) -> Option<Freeze> {
        let gap_ms = scn.checks.gap_bound_ms();
        let stalls = scn
            .groups
            .iter()
            .flat_map(|g| &g.series_checks)
            .any(|c| matches!(c.kind, runq_workload::series::SeriesKind::Stall { .. }));
        if !on || (gap_ms.is_none() && !stalls) {
            return None;
        }
        let file = self.recorder.as_ref().ok()?.0.trigger().ok()?;
        let fd = file.as_raw_fd();
        self.trigger = Some(file);
        Some(Freeze {
            tracing_on_fd: fd,
            gap_ns: gap_ms.map_or(u64::MAX, |ms| ms.saturating_mul(1_000_000)),
        })
    }

    /// On each tick of the run: the first gives the run's start; each
    /// notes runq's own threads (the sampler's, the host monitor's), which
    /// are gone when the evidence is read.
    pub fn tick(&mut self, elapsed: Duration) {
        if self.recorder.is_err() {
            return;
        }
        add_own_tids(&mut self.own);
        if self.base_ns.is_none() {
            let e = u64::try_from(elapsed.as_nanos()).unwrap_or(0);
            // CLOCK_MONOTONIC is the recorder's `mono` trace clock.
            self.base_ns = Some(runq_kernel::clock::monotonic_ns().saturating_sub(e));
        }
    }

    /// Stops recording; after a FAIL, reads the recording and writes the
    /// evidence of each failed check (its trace files under `dir`, named
    /// after `tag`), with `ctprof`'s compare of the threads each names
    /// when `--ctprof` took snapshots.
    pub fn finish(
        self,
        o: &RunOutcome,
        (dir, tag): (&Path, &str),
        ctprof: Option<&CtprofHook>,
    ) -> Option<EvidenceReport> {
        drop(self.trigger);
        if !matches!(o.verdict, Verdict::Fail | Verdict::Indeterminate) {
            return None;
        }
        let ((rec, cpus), base) = match (self.recorder, self.base_ns) {
            (Ok(r), Some(b)) => (r, b),
            (Err(why), _) => return Some(flight::unavailable(o, format!("no recording: {why}"))),
            (Ok(_), None) => {
                let why = "no recording: the run never started".to_string();
                return Some(flight::unavailable(o, why));
            }
        };
        let recording = match rec.stop() {
            Ok(r) => r,
            Err(e) => return Some(flight::unavailable(o, format!("no recording: {e}"))),
        };
        drop(rec);
        let flown = Flown {
            cpus: &cpus,
            base_ns: base,
            own: &self.own,
        };
        let around = |subjects: &[Subject]| ctprof.and_then(|c| c.around(subjects));
        let prefix = dir.join(format!("runq-evidence-{tag}"));
        Some(flight::report(o, &recording, &flown, &prefix, &around))
    }
}

/// The directory evidence files go to: `--evidence-dir`, or the system's
/// temporary directory.
pub fn dir(arg: Option<&Path>) -> PathBuf {
    arg.map_or_else(std::env::temp_dir, Path::to_path_buf)
}

/// A name for this run's files: the pid and the time, and the repeat.
pub fn tag(repeat: u32) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{}-{secs}-{repeat}", std::process::id())
}

/// Adds runq's own threads (the sampler, the host monitor, the main
/// thread) to `tids`.
fn add_own_tids(tids: &mut HashSet<i32>) {
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for e in dir.flatten() {
            if let Some(t) = e.file_name().to_str().and_then(|s| s.parse().ok()) {
                tids.insert(t);
            }
        }
    }
}
