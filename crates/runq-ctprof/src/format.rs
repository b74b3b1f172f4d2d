//! The `.ctprof.zst` file: zstd (level 3) compressed JSON of a
//! [`CtprofSnapshot`], with a format marker and a schema version.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::avail::{Capabilities, Reason, Source};
use crate::model::{CtprofSnapshot, FORMAT_NAME, SCHEMA_VERSION};
use crate::record::delta::{DeltaFile, DELTA_FORMAT};
use runq_common::safefile::Replace;

/// The zstd level snapshots are written with.
pub const ZSTD_LEVEL: i32 = 3;
/// The conventional file extension.
pub const EXTENSION: &str = ".ctprof.zst";
/// Largest decompressed snapshot accepted (guards against zip bombs).
pub const MAX_DECOMPRESSED: u64 = 4 << 30;

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Errors reading or writing a snapshot file; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The snapshot file could not be read: missing, not a regular file
    /// (a FIFO, a device, a directory) or larger than
    /// [`MAX_SNAPSHOT_BYTES`].
    #[error(transparent)]
    Input(#[from] runq_common::infile::InputError),
    /// The file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Not zstd data at all.
    #[error("{path}: not a ctprof snapshot (not zstd-compressed); pass a file written by `runq ctprof capture`")]
    NotZstd {
        /// The file.
        path: PathBuf,
    },
    /// zstd data that ends early or is damaged.
    #[error("{path}: truncated or corrupt snapshot ({detail}); capture it again")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What the decoder said.
        detail: String,
    },
    /// Valid zstd, but not a ctprof JSON document.
    #[error(
        "{path}: not a ctprof snapshot ({detail}); pass a file written by `runq ctprof capture`"
    )]
    Foreign {
        /// The file.
        path: PathBuf,
        /// Why it was rejected.
        detail: String,
    },
}

/// Serializes and compresses a snapshot (or a delta snapshot).
pub fn encode<T: serde::Serialize>(snapshot: &T) -> std::io::Result<Vec<u8>> {
    let mut enc = zstd::stream::Encoder::new(Vec::new(), ZSTD_LEVEL)?;
    serde_json::to_writer(&mut enc, snapshot).map_err(std::io::Error::other)?;
    enc.finish()
}

/// Writes a snapshot to `path` safely: a fresh temporary file renamed into
/// place in the same directory, never through a symlink, never over another
/// user's file (see `runq_common::safefile`). Returns the bytes written.
pub fn save(snapshot: &CtprofSnapshot, path: &Path) -> Result<u64, FormatError> {
    save_with(snapshot, path, Replace::OwnFile)
}

/// [`save`] with an explicit replacement policy.
pub fn save_with<T: serde::Serialize>(
    snapshot: &T,
    path: &Path,
    replace: Replace,
) -> Result<u64, FormatError> {
    let io = |source| FormatError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = encode(snapshot).map_err(io)?;
    runq_common::safefile::write_atomic(path, &bytes, replace).map_err(io)?;
    Ok(bytes.len() as u64)
}

/// A decoded file: a full snapshot or a recording's delta snapshot.
enum Decoded {
    Full(Box<CtprofSnapshot>),
    Delta(Box<DeltaFile>),
}

fn decompress(bytes: &[u8], path: &Path) -> Result<Vec<u8>, FormatError> {
    let corrupt = |e: std::io::Error| FormatError::Corrupt {
        path: path.to_path_buf(),
        detail: e.to_string(),
    };
    if bytes.len() < 4 || bytes[..4] != ZSTD_MAGIC {
        return Err(FormatError::NotZstd {
            path: path.to_path_buf(),
        });
    }
    let dec = zstd::stream::Decoder::new(bytes).map_err(corrupt)?;
    let mut json = Vec::new();
    dec.take(MAX_DECOMPRESSED)
        .read_to_end(&mut json)
        .map_err(corrupt)?;
    Ok(json)
}

fn decode_any(bytes: &[u8], path: &Path) -> Result<Decoded, FormatError> {
    let json = decompress(bytes, path)?;
    let foreign = |detail: String| FormatError::Foreign {
        path: path.to_path_buf(),
        detail,
    };
    let value: serde_json::Value =
        serde_json::from_slice(&json).map_err(|e| foreign(format!("invalid JSON: {e}")))?;
    let bad_value = |e: serde_json::Error| foreign(format!("unexpected field value: {e}"));
    match value.get("format").and_then(|f| f.as_str()) {
        Some(FORMAT_NAME) => {}
        Some(DELTA_FORMAT) => {
            return Ok(Decoded::Delta(Box::new(
                serde_json::from_value(value).map_err(bad_value)?,
            )))
        }
        _ => return Err(foreign(format!("no \"format\": \"{FORMAT_NAME}\" marker"))),
    }
    let mut snap: CtprofSnapshot = serde_json::from_value(value).map_err(bad_value)?;
    // Forward compatible: a newer schema loads; unknown fields are ignored
    // and fields this build expects but the file lacks take their default.
    let _newer = snap.schema_version > SCHEMA_VERSION;
    if snap.schema_version < 2 && snap.capabilities.is_none() {
        snap.capabilities = Some(infer_v1(&snap));
    }
    Ok(Decoded::Full(Box::new(snap)))
}

/// Decodes the bytes of a full snapshot; `path` only labels errors. A
/// delta snapshot is refused here (it needs its directory: use [`load`]).
pub fn decode(bytes: &[u8], path: &Path) -> Result<CtprofSnapshot, FormatError> {
    match decode_any(bytes, path)? {
        Decoded::Full(s) => Ok(*s),
        Decoded::Delta(_) => Err(FormatError::Foreign {
            path: path.to_path_buf(),
            detail: "a delta snapshot of a recording; load it from its directory".into(),
        }),
    }
}

/// The largest snapshot file read (compressed; a host of 10,000 threads
/// writes a few MiB).
pub const MAX_SNAPSHOT_BYTES: u64 = 256 << 20;

fn read(path: &Path) -> Result<Vec<u8>, FormatError> {
    Ok(runq_common::infile::read_bytes(
        path,
        MAX_SNAPSHOT_BYTES,
        "a ctprof snapshot",
    )?)
}

/// Reads a snapshot file. A recording's delta snapshot is rebuilt into the
/// full snapshot it stands for (its segment's full snapshot plus the
/// deltas up to it, from the same directory).
pub fn load(path: &Path) -> Result<CtprofSnapshot, FormatError> {
    match decode_any(&read(path)?, path)? {
        Decoded::Full(s) => Ok(*s),
        Decoded::Delta(d) => crate::record::delta::reconstruct(path, &d),
    }
}

/// Reads a full snapshot file (a delta is an error).
pub(crate) fn load_full(path: &Path) -> Result<CtprofSnapshot, FormatError> {
    decode(&read(path)?, path)
}

/// Reads a delta snapshot file (a full snapshot is an error).
pub(crate) fn load_delta(path: &Path) -> Result<DeltaFile, FormatError> {
    match decode_any(&read(path)?, path)? {
        Decoded::Delta(d) => Ok(*d),
        Decoded::Full(_) => Err(FormatError::Foreign {
            path: path.to_path_buf(),
            detail: "a full snapshot where a delta was expected".into(),
        }),
    }
}

/// Capabilities of a schema-1 file, inferred from its summaries.
pub fn infer_v1(snap: &CtprofSnapshot) -> Capabilities {
    let mut un = BTreeMap::new();
    if let (Some(p), Some(probe)) = (&snap.parse_summary, &snap.probe_summary) {
        let sched_ok = probe.read_ok.get("sched").copied().unwrap_or(0);
        if sched_ok > 0 && p.sched_without_schedstats >= sched_ok {
            un.insert(Source::Schedstats, Reason::NoSchedstats);
        }
    }
    if let Some(ts) = &snap.taskstats_summary {
        let reason = if ts.unavailable.is_some() {
            Some(Reason::NotQueried)
        } else if ts.eperm_count > 0 && ts.ok_count == 0 {
            Some(Reason::Eperm)
        } else {
            None
        };
        if let Some(r) = reason {
            un.insert(Source::Taskstats, r);
            un.insert(Source::Delayacct, r);
        } else if ts.delayacct_enabled == Some(false) {
            un.insert(Source::Delayacct, Reason::DelayacctOff);
        }
    }
    Capabilities {
        unavailable: un,
        host: Vec::new(),
        inferred: true,
    }
}

#[cfg(test)]
mod tests;
