//! `runq ctprof record`: snapshots at a fixed interval into a directory,
//! named by capture time, written atomically (never replacing a file),
//! with the oldest removed first to stay under a byte budget.
//!
//! Between full snapshots each interval writes a delta snapshot (see
//! [`steady`] for what is read and [`delta`] for the file); every reader
//! goes through [`crate::load`], which rebuilds the full snapshot.
//!
//! Threads that exit between two captures are counted from taskstats exit
//! notifications: each snapshot carries, per process and cgroup, the
//! threads that exited since the previous capture with their CPU time and
//! delays ([`ExitedTally`](crate::model::ExitedTally)).

pub mod delta;
mod exits;
pub mod files;
pub mod steady;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::capture::CaptureOptions;
use crate::format::{save_with, Decoded, FormatError};
use crate::model::CtprofSnapshot;
use runq_common::safefile::Replace;

pub use exits::ExitListener;
pub use files::{enforce_max_bytes, list_snapshots, select, snapshot_name};
use steady::Steady;

/// Reads a snapshot file. A recording's delta snapshot is rebuilt into the
/// full snapshot it stands for (its segment's full snapshot plus the
/// deltas up to it, from the same directory).
pub fn load(path: &Path) -> Result<CtprofSnapshot, FormatError> {
    match crate::format::load_any(path)? {
        Decoded::Full(s) => Ok(*s),
        Decoded::Delta(d) => delta::reconstruct(path, &d),
    }
}

/// Full snapshots are taken every this many intervals by default.
pub const DEFAULT_FULL_EVERY: u64 = 60;

/// When recording stops.
#[derive(Debug, Clone, Copy)]
pub enum Stop {
    /// After this many snapshots.
    Count(u64),
    /// After this much time.
    Duration(Duration),
}

/// A recording's settings.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// Output directory (must exist).
    pub dir: PathBuf,
    /// Time between capture starts.
    pub interval: Duration,
    /// When to stop.
    pub stop: Stop,
    /// Disk budget for the directory's snapshots.
    pub max_bytes: Option<u64>,
    /// A full snapshot every this many intervals (1 = every snapshot is
    /// full); the others are deltas against the snapshot before them.
    pub full_every: u64,
    /// What each capture reads.
    pub capture: CaptureOptions,
}

/// What a recording did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RecordSummary {
    /// Snapshots written.
    pub snapshots: u64,
    /// Of which full snapshots (the others are deltas).
    pub full_snapshots: u64,
    /// Snapshots removed to honour the byte budget.
    pub removed: u64,
    /// Bytes of the snapshots left in the directory.
    pub bytes_on_disk: u64,
    /// Exited threads counted from taskstats notifications.
    pub exited_threads: u64,
    /// Why exits were not counted, when they were not.
    pub exits_unavailable: Option<String>,
    /// True when a signal ended the recording.
    pub interrupted: bool,
}

impl runq_common::json::JsonDocument for RecordSummary {
    const TOOL: &'static str = "runq ctprof record";
    const SCHEMA_VERSION: u32 = 1;
}

fn wait_until(deadline: Instant, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(50)));
    }
}

/// Where the recording is in its current segment.
#[derive(Debug, Default)]
struct Segment {
    /// File name of the segment's full snapshot.
    base: String,
    /// File name of the last snapshot written.
    prev: String,
    /// Snapshots in the segment.
    files: u64,
    /// Bytes of the segment's files.
    bytes: u64,
}

impl Segment {
    /// True when the next snapshot should start a new segment: every
    /// `full_every` snapshots, or when the segment holds a quarter of the
    /// byte budget (so whole segments can be removed to honour it).
    fn wants_full(&self, opts: &RecordOptions) -> bool {
        self.files == 0
            || self.files >= opts.full_every.max(1)
            || opts.max_bytes.is_some_and(|m| self.bytes >= m / 4)
    }
}

/// Writes `snap` as a full or a delta snapshot; returns its path and size.
fn write_one(
    opts: &RecordOptions,
    steady: &Steady,
    seg: &mut Segment,
    full: bool,
    snap: &CtprofSnapshot,
) -> Result<(PathBuf, u64), FormatError> {
    let at = snap.captured_at_unix_ns;
    let name = if full {
        files::snapshot_name(at)
    } else {
        files::delta_name(at)
    };
    let path = opts.dir.join(&name);
    let bytes = if full {
        *seg = Segment {
            base: name.clone(),
            ..Segment::default()
        };
        save_with(snap, &path, Replace::Never)?
    } else {
        let d = delta::make_delta(&steady.old, &steady.fresh, snap, &seg.base, &seg.prev);
        save_with(&d, &path, Replace::Never)?
    };
    seg.prev = name;
    seg.files += 1;
    seg.bytes += bytes;
    Ok((path, bytes))
}

/// The host's exit notifications belong to a capture of the live `/proc`
/// only: a recording of another procfs tree (a fixture) does not mix them in.
fn start_exit_listener(capture: &CaptureOptions) -> Result<ExitListener, String> {
    if capture.proc_root != Path::new("/proc") {
        return Err(format!(
            "the capture reads {}, not the live /proc",
            capture.proc_root.display()
        ));
    }
    ExitListener::start()
}

/// Records until `opts.stop` or until `interrupt` is set. Each snapshot is
/// written whole or not at all; `progress` sees each file and its size.
pub fn record(
    opts: &RecordOptions,
    interrupt: &AtomicBool,
    mut progress: impl FnMut(&Path, u64),
) -> Result<RecordSummary, FormatError> {
    let mut sum = RecordSummary::default();
    let listener = start_exit_listener(&opts.capture)
        .map_err(|e| sum.exits_unavailable = Some(e))
        .ok();
    let (mut steady, mut seg) = (Steady::new(&opts.capture), Segment::default());
    let started = Instant::now();
    let mut next = started;
    loop {
        let full = seg.wants_full(opts);
        let mut snap = steady.next(full);
        if let Some(l) = &listener {
            snap.exited = l.drain(&snap.threads);
            sum.exited_threads += snap.exited.iter().map(|e| e.threads).sum::<u64>();
        }
        let (path, bytes) = write_one(opts, &steady, &mut seg, full, &snap)?;
        steady.keep(snap);
        sum.snapshots += 1;
        sum.full_snapshots += u64::from(full);
        progress(&path, bytes);
        if let Some(max) = opts.max_bytes {
            let io = |source| FormatError::Io {
                path: opts.dir.clone(),
                source,
            };
            sum.removed += enforce_max_bytes(&opts.dir, max).map_err(io)? as u64;
        }
        next += opts.interval;
        let done = match opts.stop {
            Stop::Count(n) => sum.snapshots >= n,
            Stop::Duration(d) => next.duration_since(started) > d,
        };
        if done || interrupt.load(Ordering::Relaxed) {
            break;
        }
        wait_until(next, interrupt);
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
    }
    sum.interrupted = interrupt.load(Ordering::Relaxed);
    sum.bytes_on_disk = list_snapshots(&opts.dir)
        .map(|v| v.iter().map(|s| s.1).sum())
        .unwrap_or(0);
    Ok(sum)
}

#[cfg(test)]
mod tests;
