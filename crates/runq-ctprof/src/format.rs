//! The `.ctprof.zst` file: zstd (level 3) compressed JSON of a
//! [`CtprofSnapshot`], with a format marker and a schema version.
//!
//! Reading one is bounded at every step: the file itself
//! ([`MAX_SNAPSHOT_BYTES`]), what it decompresses to ([`decompressed_cap`]
//! of its size), its header (format and version, checked before the body is
//! read: a newer schema is refused) and the body, deserialized straight
//! into its type (serde_json's recursion limit holds its nesting).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::avail::{Capabilities, Reason, Source};
use crate::model::{CtprofSnapshot, FORMAT_NAME, SCHEMA_VERSION};
use runq_common::safefile::Replace;

pub mod delta_file;
use delta_file::{DeltaFile, DELTA_FORMAT};

/// The zstd level snapshots are written with.
pub const ZSTD_LEVEL: i32 = 3;
/// The conventional file extension.
pub const EXTENSION: &str = ".ctprof.zst";
/// The most any snapshot may decompress to, however large its file.
pub const MAX_DECOMPRESSED: u64 = 1 << 30;
/// The most a snapshot may decompress to per byte of its file. runq's own
/// grow 3 to 6 times (a delta, a host of 100 threads) and at most about 30
/// times (10,000 threads alike); a file that grows more is a zstd bomb.
pub const MAX_RATIO: u64 = 128;
/// What any snapshot may decompress to, however small its file (the ratio
/// never refuses a tiny one).
pub const MIN_DECOMPRESSED_CAP: u64 = 16 << 20;

/// The most a snapshot file of `compressed` bytes may decompress to:
/// [`MAX_RATIO`] times its size, at least [`MIN_DECOMPRESSED_CAP`], at
/// most [`MAX_DECOMPRESSED`].
pub fn decompressed_cap(compressed: u64) -> u64 {
    compressed
        .saturating_mul(MAX_RATIO)
        .clamp(MIN_DECOMPRESSED_CAP, MAX_DECOMPRESSED)
}

/// A size for an error line: KiB under one MiB, MiB above.
fn size(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{} KiB", bytes.div_ceil(1024))
    } else {
        format!("{} MiB", bytes.div_ceil(1 << 20))
    }
}

/// Why a file that decompresses past `cap` is not a snapshot.
fn oversized_why(compressed: u64, cap: u64) -> String {
    if cap >= MAX_DECOMPRESSED {
        "more than any snapshot runq reads".into()
    } else {
        let ratio = cap / compressed.max(1);
        format!("over {ratio}× its size; runq's own grow about 30× at most")
    }
}

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
    /// zstd data that decompresses to more than [`decompressed_cap`]
    /// allows for its size: a zstd bomb, not a snapshot runq wrote. Refused
    /// as soon as the cap is passed.
    #[error(
        "{path}: not a ctprof snapshot: its {} decompress to more than {} ({}); pass a file written by `runq ctprof capture`",
        size(*compressed), size(*cap), oversized_why(*compressed, *cap)
    )]
    Oversized {
        /// The file.
        path: PathBuf,
        /// Its size, compressed.
        compressed: u64,
        /// The most it was allowed to decompress to.
        cap: u64,
    },
    /// A snapshot (or delta) of a schema newer than this build reads;
    /// refused before its body is read.
    #[error("{path}: a ctprof snapshot of schema version {found}, newer than this runq reads (version {newest} and older); read it with a newer runq")]
    Newer {
        /// The file.
        path: PathBuf,
        /// The `schema_version` the file states.
        found: u64,
        /// The newest this build reads ([`SCHEMA_VERSION`]).
        newest: u32,
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

/// Serializes and compresses a snapshot (or a delta snapshot), the
/// compression on a second thread as the JSON is written.
pub fn encode<T: serde::Serialize>(snapshot: &T) -> std::io::Result<Vec<u8>> {
    pipe::compress_while_writing(ZSTD_LEVEL, |w| {
        serde_json::to_writer(w, snapshot).map_err(std::io::Error::other)
    })
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
pub(crate) enum Decoded {
    Full(Box<CtprofSnapshot>),
    Delta(Box<DeltaFile>),
}

/// Decompresses a snapshot file's bytes, refusing data that grows past
/// [`decompressed_cap`] of their size as soon as it does.
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
    let compressed = bytes.len() as u64;
    let cap = decompressed_cap(compressed);
    let dec = zstd::stream::Decoder::new(bytes).map_err(corrupt)?;
    let mut json = Vec::new();
    dec.take(cap + 1).read_to_end(&mut json).map_err(corrupt)?;
    if json.len() as u64 > cap {
        return Err(FormatError::Oversized {
            path: path.to_path_buf(),
            compressed,
            cap,
        });
    }
    Ok(json)
}

/// The two fields that say what a file is, read before its body (every
/// other field is skipped without being built).
#[derive(serde::Deserialize)]
struct Header {
    format: Option<String>,
    schema_version: Option<u64>,
}

/// Checks the header of a decompressed file: its format marker and a
/// version this build reads. Returns whether it is a delta snapshot.
fn check_header(json: &[u8], path: &Path) -> Result<bool, FormatError> {
    let foreign = |detail: String| FormatError::Foreign {
        path: path.to_path_buf(),
        detail,
    };
    if json.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        // serde would take an array for a struct, field by field.
        return Err(foreign("not a JSON object".into()));
    }
    let header: Header = serde_json::from_slice(json).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => foreign(format!("bad header: {e}")),
        _ => foreign(format!("invalid JSON: {e}")),
    })?;
    let delta = match header.format.as_deref() {
        Some(FORMAT_NAME) => false,
        Some(DELTA_FORMAT) => true,
        _ => return Err(foreign(format!("no \"format\": \"{FORMAT_NAME}\" marker"))),
    };
    match header.schema_version {
        None => Err(foreign("no \"schema_version\"".into())),
        Some(0) => Err(foreign("schema_version 0, which runq never wrote".into())),
        Some(v) if v > u64::from(SCHEMA_VERSION) => Err(FormatError::Newer {
            path: path.to_path_buf(),
            found: v,
            newest: SCHEMA_VERSION,
        }),
        Some(_) => Ok(delta),
    }
}

/// Decodes a snapshot file: bounded decompression, the header checked,
/// then the body deserialized straight into its type (unknown fields are
/// skipped; fields this build expects but the file lacks take their
/// default).
fn decode_any(bytes: &[u8], path: &Path) -> Result<Decoded, FormatError> {
    let json = decompress(bytes, path)?;
    let delta = check_header(&json, path)?;
    let bad_value = |e: serde_json::Error| FormatError::Foreign {
        path: path.to_path_buf(),
        detail: format!("unexpected field value: {e}"),
    };
    if delta {
        let d: DeltaFile = serde_json::from_slice(&json).map_err(bad_value)?;
        return Ok(Decoded::Delta(Box::new(d)));
    }
    let mut snap: CtprofSnapshot = serde_json::from_slice(&json).map_err(bad_value)?;
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

/// Reads a snapshot file: a full snapshot or a recording's delta one.
pub(crate) fn load_any(path: &Path) -> Result<Decoded, FormatError> {
    decode_any(&read(path)?, path)
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

mod pipe;

#[cfg(test)]
mod tests;
