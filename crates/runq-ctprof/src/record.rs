//! `runq ctprof record`: snapshots at a fixed interval into a directory,
//! named by capture time, written atomically (never replacing a file),
//! with the oldest removed first to stay under a byte budget.
//!
//! Threads that exit between two captures are counted from taskstats exit
//! notifications: each snapshot carries, per process and cgroup, the
//! threads that exited since the previous capture with their CPU time and
//! delays ([`ExitedTally`]).

mod exits;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::capture::{capture, CaptureOptions};
use crate::format::{save_with, FormatError, EXTENSION};
use crate::safefile::Replace;

pub use exits::ExitListener;

/// Threads of one process (and cgroup) that exited during an interval.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExitedTally {
    /// Thread-group id.
    pub tgid: u32,
    /// Process name (the thread's own name when the process was gone).
    pub pcomm: String,
    /// cgroup v2 path (empty when the process was gone before it was read).
    pub cgroup: String,
    /// Threads that exited.
    pub threads: u64,
    /// Their on-CPU time, ns.
    pub cpu_ns: u64,
    /// Their runqueue delay, ns (delay accounting).
    pub cpu_delay_ns: u64,
    /// Their block-I/O delay, ns (delay accounting).
    pub blkio_delay_ns: u64,
}

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
    /// What each capture reads.
    pub capture: CaptureOptions,
}

/// The name of the snapshot captured at `unix_ns`:
/// `ctprof-20261123T093612.123Z.ctprof.zst` (UTC, sorts by time).
pub fn snapshot_name(unix_ns: u64) -> String {
    let secs = (unix_ns / 1_000_000_000) as i64;
    let ms = (unix_ns / 1_000_000) % 1000;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "ctprof-{y:04}{m:02}{d:02}T{:02}{:02}{:02}.{ms:03}Z{EXTENSION}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The snapshots of a recording directory, oldest first, with their sizes.
pub fn list_snapshots(dir: &Path) -> std::io::Result<Vec<(PathBuf, u64)>> {
    let mut v: Vec<(PathBuf, u64)> = std::fs::read_dir(dir)?
        .flatten()
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("ctprof-") && n.ends_with(EXTENSION)
        })
        .filter_map(|e| Some((e.path(), e.metadata().ok()?.len())))
        .collect();
    v.sort();
    Ok(v)
}

/// Removes the oldest snapshots until the directory's snapshots fit in
/// `max_bytes`; the newest is always kept. Returns the files removed.
pub fn enforce_max_bytes(dir: &Path, max_bytes: u64) -> std::io::Result<usize> {
    let snaps = list_snapshots(dir)?;
    let mut total: u64 = snaps.iter().map(|s| s.1).sum();
    let mut removed = 0;
    for (path, len) in &snaps[..snaps.len().saturating_sub(1)] {
        if total <= max_bytes {
            break;
        }
        std::fs::remove_file(path)?;
        total -= len;
        removed += 1;
    }
    Ok(removed)
}

/// Picks a snapshot of a recording directory: `first`, `last`, or a UTC
/// time (`20261123T093336`, `2026-11-23T09:33:36`, any prefix) naming the
/// latest snapshot taken at or before it.
pub fn select(dir: &Path, sel: &str) -> Result<PathBuf, String> {
    let snaps = list_snapshots(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let stamp = |p: &Path| {
        let n = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        n.trim_start_matches("ctprof-")
            .trim_end_matches(EXTENSION)
            .to_string()
    };
    let (Some(first), Some(last)) = (snaps.first(), snaps.last()) else {
        return Err(format!(
            "{}: no ctprof-*.ctprof.zst snapshots; record some with `runq ctprof record`",
            dir.display()
        ));
    };
    match sel {
        "first" => return Ok(first.0.clone()),
        "last" => return Ok(last.0.clone()),
        _ => {}
    }
    let want: String = sel.chars().filter(|c| !matches!(c, '-' | ':')).collect();
    let ok = want.len() >= 8
        && want
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, 'T' | '.' | 'Z'));
    if !ok {
        return Err(format!(
            "@{sel}: use @first, @last or a UTC time such as @2026-11-23T09:33:36"
        ));
    }
    // Pad the prefix so `20261123T0933` means the end of that minute.
    let padded = format!("{want}{}", &"99999999T999999.999Z"[want.len().min(20)..]);
    snaps
        .iter()
        .rev()
        .find(|(p, _)| stamp(p) <= padded)
        .map(|(p, _)| p.clone())
        .ok_or_else(|| {
            format!(
                "@{sel}: the first snapshot is {}; pick a later time",
                stamp(&first.0)
            )
        })
}

/// What a recording did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RecordSummary {
    /// Snapshots written.
    pub snapshots: u64,
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

fn wait_until(deadline: Instant, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(50)));
    }
}

/// Records until `opts.stop` or until `interrupt` is set. Each snapshot is
/// written whole or not at all; `progress` sees each file and its size.
pub fn record(
    opts: &RecordOptions,
    interrupt: &AtomicBool,
    mut progress: impl FnMut(&Path, u64),
) -> Result<RecordSummary, FormatError> {
    let mut sum = RecordSummary::default();
    let listener = match ExitListener::start() {
        Ok(l) => Some(l),
        Err(e) => {
            sum.exits_unavailable = Some(e);
            None
        }
    };
    let started = Instant::now();
    let mut next = started;
    loop {
        let mut snap = capture(&opts.capture);
        if let Some(l) = &listener {
            snap.exited = l.drain(&snap.threads);
            sum.exited_threads += snap.exited.iter().map(|e| e.threads).sum::<u64>();
        }
        let path = opts.dir.join(snapshot_name(snap.captured_at_unix_ns));
        let bytes = save_with(&snap, &path, Replace::Never)?;
        sum.snapshots += 1;
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
