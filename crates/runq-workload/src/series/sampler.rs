//! The run loop's sampler: every interval, each running group's progress
//! board (work units, iterations) and its workers' schedstat files
//! (on-CPU time, run delay; kept open and re-read with `pread`) become one
//! snapshot of its [`GroupSeries`]; the host monitor ([`HostMonitor`])
//! samples beside it on its own thread. A group with a `stall` check on
//! work units or iterations is watched live: the first snapshot that finds
//! its counter still for longer than the check allows sets off the flight
//! recorder's freeze, when one is armed (see [`Freeze`]).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use runq_kernel::schedstat::{parse_schedstat, Schedstat};

use super::check::SeriesKind;
use super::host_monitor::{HostMonitor, WaitProbe};
use super::{GroupSeries, Metric, RunSeries};
use crate::alarm::Freeze;
use crate::progress::{ProgressBoard, ProgressTotals};
use crate::scenario::Scenario;
use crate::spawn::WorkerId;

/// The most schedstat files the sampler keeps open (and re-reads every
/// interval): beyond it, groups record no `cpu_time_ns`/`run_delay_ns`,
/// which keeps a crowd of workers from costing more than the run's budget
/// (a re-read costs a few µs) or its file descriptors.
const MAX_SCHEDSTAT_FILES: usize = 128;

/// Takes the snapshots of one run.
pub(crate) struct Sampler {
    interval: Duration,
    start: Instant,
    next_due: Duration,
    tracks: Vec<Track>,
    snapshots: u64,
    cpu_ns: u64,
    files_left: usize,
    host: HostMonitor,
    /// The recorder's trigger, until a stall sets it off.
    freeze: Option<Freeze>,
}

/// One group's board, schedstat files and series.
struct Track {
    board: ProgressBoard,
    /// One per worker, or `None` when the group's schedstat is not read.
    stats: Option<Vec<StatFile>>,
    active: bool,
    series: GroupSeries,
    stall: Option<StallWatch>,
}

/// A group's live watch of the counter its tightest `stall` check judges.
struct StallWatch {
    metric: Metric,
    bound_ns: u64,
    after_ns: u64,
    last: Option<u64>,
    moved_at_ns: u64,
}

impl StallWatch {
    /// The watch of `checks`' tightest stall check on work units or
    /// iterations (schedstat counters are not read live for every group).
    fn of(checks: &[super::SeriesCheck]) -> Option<StallWatch> {
        checks
            .iter()
            .filter(|c| matches!(c.metric, Metric::WorkUnits | Metric::Iterations))
            .filter_map(|c| match c.kind {
                SeriesKind::Stall { max_stall_ns } => Some(StallWatch {
                    metric: c.metric,
                    bound_ns: max_stall_ns,
                    after_ns: c.after_ns,
                    last: None,
                    moved_at_ns: 0,
                }),
                _ => None,
            })
            .min_by_key(|w| w.bound_ns)
    }

    /// Notes the counter at `at_ns`; true once it has been still for
    /// longer than the bound (counted from the warm-up's end).
    fn stalled(&mut self, t: ProgressTotals, at_ns: u64) -> bool {
        let v = match self.metric {
            Metric::Iterations => t.iterations,
            _ => t.work_units,
        };
        if self.last != Some(v) {
            self.last = Some(v);
            self.moved_at_ns = at_ns;
            return false;
        }
        at_ns.saturating_sub(self.moved_at_ns.max(self.after_ns)) > self.bound_ns
    }
}

/// A worker's open schedstat file and its last reading (kept once the
/// worker is gone, so the group's sum never drops).
struct StatFile {
    file: Option<File>,
    last: Schedstat,
}

impl StatFile {
    fn open(w: &WorkerId) -> Option<StatFile> {
        let path = if w.thread {
            format!("/proc/self/task/{}/schedstat", w.id)
        } else {
            format!("/proc/{}/schedstat", w.id)
        };
        let file = File::open(path).ok()?;
        Some(StatFile {
            file: Some(file),
            last: Schedstat::default(),
        })
    }

    fn read(&mut self) -> Schedstat {
        let mut buf = [0u8; 96];
        let got = self.file.as_ref().map(|f| f.read_at(&mut buf, 0));
        let parsed = match got {
            Some(Ok(n)) => std::str::from_utf8(&buf[..n])
                .ok()
                .and_then(parse_schedstat),
            _ => None,
        };
        match parsed {
            Some(s) => self.last = s,
            None => self.file = None, // the worker is gone: keep its last reading
        }
        self.last
    }
}

impl Sampler {
    /// A sampler for `scn`'s groups, one progress board each, and a host
    /// monitor with the runnable-wait probe `wait`.
    pub(crate) fn new(scn: &Scenario, interval: Duration, wait: WaitProbe) -> io::Result<Sampler> {
        let tracks = scn
            .groups
            .iter()
            .map(|g| {
                Ok(Track {
                    board: ProgressBoard::new(g.workers)?,
                    stats: None,
                    active: false,
                    series: GroupSeries {
                        group: g.name.clone(),
                        ..GroupSeries::default()
                    },
                    stall: StallWatch::of(&g.series_checks),
                })
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Sampler {
            interval,
            start: Instant::now(),
            next_due: Duration::ZERO,
            tracks,
            snapshots: 0,
            cpu_ns: 0,
            files_left: MAX_SCHEDSTAT_FILES,
            host: HostMonitor::new(wait),
            freeze: None,
        })
    }

    /// Arms the flight recorder's trigger, when there is one, for a stall
    /// that passes its check's bound.
    pub(crate) fn arm_freeze(&mut self, f: Option<Freeze>) {
        self.freeze = f;
    }

    /// Group `idx`'s progress board, for its workers.
    pub(crate) fn board(&self, idx: usize) -> ProgressBoard {
        self.tracks[idx].board.clone()
    }

    /// Starts the clock: snapshot times count from now, the first is due.
    pub(crate) fn begin(&mut self) {
        self.start = Instant::now();
        self.next_due = Duration::ZERO;
        self.host.begin(self.start);
    }

    /// Group `idx` runs from now, with these of `workers` (every worker
    /// of the run; the group's are picked out).
    pub(crate) fn activate(&mut self, idx: usize, workers: &[WorkerId]) {
        let mine: Vec<&WorkerId> = workers.iter().filter(|w| w.group_idx == idx).collect();
        let track = &mut self.tracks[idx];
        track.active = true;
        if mine.len() <= self.files_left {
            let files: Option<Vec<StatFile>> = mine.iter().map(|w| StatFile::open(w)).collect();
            if let Some(files) = files {
                self.files_left -= files.len();
                track.stats = Some(files);
            }
        }
    }

    /// Group `idx` stops now: its last snapshot is taken first.
    pub(crate) fn deactivate(&mut self, idx: usize) {
        let at = self.elapsed_ns();
        let t0 = runq_kernel::clock::thread_cpu_ns();
        if self.tracks[idx].active {
            // A group's last snapshot sets nothing off: it is stopping.
            let _ = self.tracks[idx].snapshot(at);
        }
        self.tracks[idx].active = false;
        self.tracks[idx].stats = None;
        self.cpu_ns += runq_kernel::clock::thread_cpu_ns().saturating_sub(t0);
    }

    /// How long until the next snapshot is due.
    pub(crate) fn until_due(&self) -> Duration {
        self.next_due.saturating_sub(self.start.elapsed())
    }

    /// Takes a snapshot when one is due; the next is due at the next
    /// multiple of the interval (a late loop skips, never bunches).
    pub(crate) fn tick(&mut self) {
        let now = self.start.elapsed();
        if now < self.next_due {
            return;
        }
        self.snapshot_all();
        let n = now.as_nanos() / self.interval.as_nanos().max(1) + 1;
        self.next_due = self.interval * u32::try_from(n).unwrap_or(u32::MAX);
    }

    /// A snapshot of every running group, now.
    pub(crate) fn snapshot_all(&mut self) {
        let t0 = runq_kernel::clock::thread_cpu_ns();
        let at = self.elapsed_ns();
        let mut stalled = false;
        for t in self.tracks.iter_mut().filter(|t| t.active) {
            stalled |= t.snapshot(at);
        }
        if let Some(f) = self.freeze.filter(|_| stalled) {
            self.freeze = None;
            crate::alarm::freeze_recording(f);
        }
        self.snapshots += 1;
        self.cpu_ns += runq_kernel::clock::thread_cpu_ns().saturating_sub(t0);
    }

    /// The series of every group that ran.
    pub(crate) fn finish(self) -> RunSeries {
        RunSeries {
            interval_ns: u64::try_from(self.interval.as_nanos()).unwrap_or(u64::MAX),
            snapshots: self.snapshots,
            sampler_cpu_ns: self.cpu_ns,
            groups: self
                .tracks
                .into_iter()
                .filter(|t| !t.series.at_ns.is_empty())
                .map(|t| t.series)
                .collect(),
            host: Some(self.host.finish()),
        }
    }

    fn elapsed_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

impl Track {
    /// Appends one snapshot taken at `at_ns`; true when the group's
    /// watched counter has stalled past its check's bound.
    fn snapshot(&mut self, at_ns: u64) -> bool {
        let totals = self.board.totals();
        let stalled = self
            .stall
            .as_mut()
            .is_some_and(|w| w.stalled(totals, at_ns));
        let s = &mut self.series;
        s.at_ns.push(at_ns);
        s.work_units.push(totals.work_units);
        s.iterations.push(totals.iterations);
        let Some(files) = self.stats.as_mut() else {
            return stalled;
        };
        let (mut cpu, mut delay) = (0u64, 0u64);
        for f in files {
            let st = f.read();
            cpu += st.cpu_time_ns;
            delay += st.run_delay_ns;
        }
        s.cpu_time_ns.get_or_insert_with(Vec::new).push(cpu);
        s.run_delay_ns.get_or_insert_with(Vec::new).push(delay);
        stalled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::SeriesCheck;

    const MS: u64 = 1_000_000;

    fn stall(metric: Metric, ms: u64, after_ms: u64) -> SeriesCheck {
        SeriesCheck {
            metric,
            after_ns: after_ms * MS,
            kind: SeriesKind::Stall {
                max_stall_ns: ms * MS,
            },
        }
    }

    fn units(work_units: u64) -> ProgressTotals {
        ProgressTotals {
            work_units,
            iterations: 0,
        }
    }

    #[test]
    fn a_stall_is_seen_live_once_the_counter_is_still_past_the_bound() {
        let checks = [
            stall(Metric::CpuTime, 10, 0),
            stall(Metric::WorkUnits, 1_000, 0),
            stall(Metric::WorkUnits, 500, 200),
        ];
        let mut w = StallWatch::of(&checks).expect("a work-unit stall check");
        assert_eq!(w.bound_ns, 500 * MS, "the tightest, on a counter read live");
        assert!(!w.stalled(units(5), 0));
        assert!(
            !w.stalled(units(5), 600 * MS),
            "600 ms from the warm-up's end at 200"
        );
        assert!(w.stalled(units(5), 800 * MS));
        assert!(!w.stalled(units(6), 900 * MS), "it moved");
        assert!(!w.stalled(units(6), 1_300 * MS));
        assert!(w.stalled(units(6), 1_500 * MS));
        assert!(StallWatch::of(&[stall(Metric::RunDelay, 10, 0)]).is_none());
    }
}
