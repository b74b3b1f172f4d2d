//! A recording directory's files: time-based names, listing, `@TIME`
//! selection and the byte budget.
//!
//! A recording is a series of segments: a full snapshot
//! (`ctprof-<UTC>.ctprof.zst`) followed by delta snapshots
//! (`ctprof-<UTC>.delta.ctprof.zst`) that each hold what changed since the
//! file before them. The budget removes whole segments, oldest first, so a
//! delta never outlives the full snapshot it is built on.

use std::path::{Path, PathBuf};

use crate::format::EXTENSION;

/// What marks a delta snapshot's file name (before [`EXTENSION`]).
pub const DELTA_MARK: &str = ".delta";

/// The name of the full snapshot captured at `unix_ns`:
/// `ctprof-20261123T093612.123Z.ctprof.zst` (UTC, sorts by time).
pub fn snapshot_name(unix_ns: u64) -> String {
    format!("ctprof-{}{EXTENSION}", stamp_of(unix_ns))
}

/// The name of the delta snapshot captured at `unix_ns`:
/// `ctprof-20261123T093613.123Z.delta.ctprof.zst`.
pub fn delta_name(unix_ns: u64) -> String {
    format!("ctprof-{}{DELTA_MARK}{EXTENSION}", stamp_of(unix_ns))
}

fn stamp_of(unix_ns: u64) -> String {
    let secs = (unix_ns / 1_000_000_000) as i64;
    let ms = (unix_ns / 1_000_000) % 1000;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}.{ms:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
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

/// True when `path` names a delta snapshot.
pub fn is_delta(path: &Path) -> bool {
    path.file_name().is_some_and(|n| {
        n.to_string_lossy()
            .ends_with(&format!("{DELTA_MARK}{EXTENSION}"))
    })
}

/// The UTC stamp of a snapshot file name (`20261123T093336.559Z`).
pub fn stamp(path: &Path) -> String {
    let n = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    n.trim_start_matches("ctprof-")
        .trim_end_matches(EXTENSION)
        .trim_end_matches(DELTA_MARK)
        .to_string()
}

/// The snapshots (full and delta) a recording wrote in `dir`
/// (`ctprof-<UTC>…`), oldest first, with their sizes: what `--max-bytes`
/// may remove and `DIR@TIME` selects from.
pub fn list_snapshots(dir: &Path) -> std::io::Result<Vec<(PathBuf, u64)>> {
    list_matching(dir, |n| n.starts_with("ctprof-"))
}

/// Every `*.ctprof.zst` in `dir`, by name, with their sizes: the
/// snapshots a directory compare reads (captures named by hand as well
/// as a recording's files).
pub fn list_all_snapshots(dir: &Path) -> std::io::Result<Vec<(PathBuf, u64)>> {
    list_matching(dir, |_| true)
}

fn list_matching(dir: &Path, keep: impl Fn(&str) -> bool) -> std::io::Result<Vec<(PathBuf, u64)>> {
    let mut v: Vec<(PathBuf, u64)> = std::fs::read_dir(dir)?
        .flatten()
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.ends_with(EXTENSION) && keep(&n)
        })
        .filter_map(|e| Some((e.path(), e.metadata().ok()?.len())))
        .collect();
    v.sort();
    Ok(v)
}

/// Splits a listing into segments: a full snapshot and the deltas after
/// it (deltas before the first full form a segment of their own).
pub fn segments(snaps: &[(PathBuf, u64)]) -> Vec<&[(PathBuf, u64)]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, (p, _)) in snaps.iter().enumerate() {
        if i > start && !is_delta(p) {
            out.push(&snaps[start..i]);
            start = i;
        }
    }
    if start < snaps.len() {
        out.push(&snaps[start..]);
    }
    out
}

/// Removes the oldest segments (a full snapshot with its deltas, newest
/// delta first) until the directory's snapshots fit in `max_bytes`; the
/// newest segment is always kept. Returns the files removed.
pub fn enforce_max_bytes(dir: &Path, max_bytes: u64) -> std::io::Result<usize> {
    let snaps = list_snapshots(dir)?;
    let mut total: u64 = snaps.iter().map(|s| s.1).sum();
    let mut removed = 0;
    let segs = segments(&snaps);
    for seg in &segs[..segs.len().saturating_sub(1)] {
        if total <= max_bytes {
            break;
        }
        for (path, len) in seg.iter().rev() {
            std::fs::remove_file(path)?;
            total -= len;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Picks a snapshot of a recording directory: `first`, `last`, or a UTC
/// time (`20261123T093336`, `2026-11-23T09:33:36`, any prefix) naming the
/// latest snapshot taken at or before it.
pub fn select(dir: &Path, sel: &str) -> Result<PathBuf, String> {
    let snaps = list_snapshots(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
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
