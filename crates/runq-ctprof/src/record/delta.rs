//! Delta snapshots: what changed since the previous file of a recording,
//! field by field, and the reconstruction of a full snapshot from the
//! segment's full snapshot plus its deltas up to the one asked for.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::{Map, Value};

use super::files::{is_delta, list_all_snapshots, list_snapshots};
use crate::format::FormatError;
use crate::model::{CtprofSnapshot, ThreadState, FORMAT_NAME, SCHEMA_VERSION};

pub use crate::format::delta_file::{DeltaFile, ThreadDelta, DELTA_FORMAT};

fn object(t: &ThreadState) -> Map<String, Value> {
    match serde_json::to_value(t) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// The change from `old` (absent for a new thread) to `new`; `None` when
/// nothing changed.
pub fn diff_thread(old: Option<&ThreadState>, new: &ThreadState) -> Option<ThreadDelta> {
    if old == Some(new) {
        return None;
    }
    let a = old.map(object).unwrap_or_default();
    let b = object(new);
    let set: Map<String, Value> = b
        .iter()
        .filter(|(k, v)| a.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let unset: Vec<String> = a.keys().filter(|k| !b.contains_key(*k)).cloned().collect();
    Some(ThreadDelta {
        tid: new.tid,
        start: new.start_time_clock_ticks,
        set,
        unset,
    })
}

/// The delta from the previous snapshot's threads to `snap`. `old` holds
/// the previous state of every thread re-read this interval (and of those
/// gone), keyed by tid; `fresh` names the threads re-read (the others are
/// unchanged by construction).
pub fn make_delta(
    old: &HashMap<u32, ThreadState>,
    fresh: &HashSet<u32>,
    snap: &CtprofSnapshot,
    base: &str,
    prev: &str,
) -> DeltaFile {
    let mut now: HashMap<u32, u64> = HashMap::new();
    let mut threads = Vec::new();
    for t in snap.threads.iter().filter(|t| fresh.contains(&t.tid)) {
        now.insert(t.tid, t.start_time_clock_ticks);
        let before = old.get(&t.tid).filter(|o| o.key() == t.key());
        threads.extend(diff_thread(before, t));
    }
    let mut gone: Vec<(u32, u64)> = old
        .values()
        .filter(|o| now.get(&o.tid) != Some(&o.start_time_clock_ticks))
        .map(ThreadState::key)
        .collect();
    gone.sort_unstable();
    DeltaFile {
        format: DELTA_FORMAT.into(),
        schema_version: SCHEMA_VERSION,
        base: base.into(),
        prev: prev.into(),
        captured_at_unix_ns: snap.captured_at_unix_ns,
        capture_duration_ns: snap.capture_duration_ns,
        threads,
        gone,
        psi: snap.psi,
        probe_summary: snap.probe_summary.clone(),
        parse_summary: snap.parse_summary.clone(),
        taskstats_summary: snap.taskstats_summary.clone(),
        exited: snap.exited.clone(),
    }
}

/// Applies a delta to the snapshot it was taken against.
pub fn apply(snap: &mut CtprofSnapshot, d: &DeltaFile) -> Result<(), String> {
    let gone: HashSet<(u32, u64)> = d.gone.iter().copied().collect();
    if !gone.is_empty() {
        snap.threads.retain(|t| !gone.contains(&t.key()));
    }
    let index: HashMap<(u32, u64), usize> = snap
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (t.key(), i))
        .collect();
    for td in &d.threads {
        let slot = index.get(&(td.tid, td.start)).copied();
        let mut obj = slot.map(|i| object(&snap.threads[i])).unwrap_or_default();
        for k in &td.unset {
            obj.remove(k);
        }
        obj.extend(td.set.iter().map(|(k, v)| (k.clone(), v.clone())));
        let t: ThreadState = serde_json::from_value(Value::Object(obj))
            .map_err(|e| format!("thread {}: {e}", td.tid))?;
        match slot {
            Some(i) => snap.threads[i] = t,
            None => snap.threads.push(t),
        }
    }
    snap.threads.sort_unstable_by_key(|t| (t.tgid, t.tid));
    snap.captured_at_unix_ns = d.captured_at_unix_ns;
    snap.capture_duration_ns = d.capture_duration_ns;
    snap.psi = d.psi;
    snap.probe_summary.clone_from(&d.probe_summary);
    snap.parse_summary.clone_from(&d.parse_summary);
    snap.taskstats_summary.clone_from(&d.taskstats_summary);
    snap.exited.clone_from(&d.exited);
    Ok(())
}

fn broken(path: &Path, detail: String) -> FormatError {
    FormatError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("delta chain broken: {detail}"),
    }
}

/// Rebuilds the full snapshot a delta file stands for: its segment's full
/// snapshot (in the same directory) plus every delta up to and including
/// `path`, each checked to follow the one before.
pub fn reconstruct(path: &Path, target: &DeltaFile) -> Result<CtprofSnapshot, FormatError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if target.base.contains('/') || !target.base.starts_with("ctprof-") {
        return Err(broken(path, format!("bad base name {:?}", target.base)));
    }
    let base_path = dir.join(&target.base);
    let mut snap = crate::format::load_full(&base_path)
        .map_err(|e| broken(path, format!("its full snapshot: {e}")))?;
    let io = |source| FormatError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let me = path.file_name().map(|n| n.to_os_string());
    let mut prev = target.base.clone();
    for (p, _) in list_snapshots(dir).map_err(io)? {
        let name = p.file_name().map(|n| n.to_os_string());
        if !is_delta(&p) || p <= base_path || name > me {
            continue;
        }
        let d = if name == me {
            target.clone()
        } else {
            crate::format::load_delta(&p)?
        };
        if d.base != target.base {
            continue;
        }
        if d.prev != prev {
            return Err(broken(&p, format!("follows {:?}, not {prev:?}", d.prev)));
        }
        apply(&mut snap, &d).map_err(|e| broken(&p, e))?;
        prev = p
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    }
    if snap.captured_at_unix_ns != target.captured_at_unix_ns {
        return Err(broken(path, "its own file is missing".into()));
    }
    snap.format = FORMAT_NAME.into();
    Ok(snap)
}

/// Calls `f` with every snapshot of a directory (every `*.ctprof.zst`, by
/// name: a recording, or captures named by hand), oldest first,
/// rebuilding deltas one after the other (each applied once); returns the
/// last snapshot.
pub fn for_each_snapshot(
    dir: &Path,
    mut f: impl FnMut(&CtprofSnapshot),
) -> Result<Option<CtprofSnapshot>, FormatError> {
    let io = |source| FormatError::Io {
        path: dir.to_path_buf(),
        source,
    };
    // The snapshot so far, its segment's full snapshot and the last file.
    let mut cur: Option<(CtprofSnapshot, String, String)> = None;
    for (p, _) in list_all_snapshots(dir).map_err(io)? {
        let name = p
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        if !is_delta(&p) {
            let s = crate::format::load_full(&p)?;
            f(&s);
            cur = Some((s, name.clone(), name));
            continue;
        }
        let d = crate::format::load_delta(&p)?;
        match &mut cur {
            Some((s, base, prev)) if d.base == *base && d.prev == *prev => {
                apply(s, &d).map_err(|e| broken(&p, e))?;
                f(s);
                *prev = name;
            }
            _ => {
                let s = reconstruct(&p, &d)?;
                f(&s);
                cur = Some((s, d.base.clone(), name));
            }
        }
    }
    Ok(cur.map(|c| c.0))
}

#[cfg(test)]
mod tests;
