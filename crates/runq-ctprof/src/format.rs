//! The `.ctprof.zst` file: zstd (level 3) compressed JSON of a
//! [`CtprofSnapshot`], with a format marker and a schema version.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::model::{CtprofSnapshot, FORMAT_NAME, SCHEMA_VERSION};
use crate::safefile::Replace;

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
    /// The file could not be opened, read or written.
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

/// Serializes and compresses a snapshot.
pub fn encode(snapshot: &CtprofSnapshot) -> std::io::Result<Vec<u8>> {
    let mut enc = zstd::stream::Encoder::new(Vec::new(), ZSTD_LEVEL)?;
    serde_json::to_writer(&mut enc, snapshot).map_err(std::io::Error::other)?;
    enc.finish()
}

/// Writes a snapshot to `path` safely: a fresh temporary file renamed into
/// place in the same directory, never through a symlink, never over another
/// user's file (see [`crate::safefile`]). Returns the bytes written.
pub fn save(snapshot: &CtprofSnapshot, path: &Path) -> Result<u64, FormatError> {
    save_with(snapshot, path, Replace::OwnFile)
}

/// [`save`] with an explicit replacement policy.
pub fn save_with(
    snapshot: &CtprofSnapshot,
    path: &Path,
    replace: Replace,
) -> Result<u64, FormatError> {
    let io = |source| FormatError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = encode(snapshot).map_err(io)?;
    crate::safefile::write_atomic(path, &bytes, replace).map_err(io)?;
    Ok(bytes.len() as u64)
}

/// Decodes snapshot bytes; `path` only labels errors.
pub fn decode(bytes: &[u8], path: &Path) -> Result<CtprofSnapshot, FormatError> {
    let path = path.to_path_buf();
    if bytes.len() < 4 || bytes[..4] != ZSTD_MAGIC {
        return Err(FormatError::NotZstd { path });
    }
    let dec = zstd::stream::Decoder::new(bytes).map_err(|e| FormatError::Corrupt {
        path: path.clone(),
        detail: e.to_string(),
    })?;
    let mut json = Vec::new();
    dec.take(MAX_DECOMPRESSED)
        .read_to_end(&mut json)
        .map_err(|e| FormatError::Corrupt {
            path: path.clone(),
            detail: e.to_string(),
        })?;
    let value: serde_json::Value =
        serde_json::from_slice(&json).map_err(|e| FormatError::Foreign {
            path: path.clone(),
            detail: format!("invalid JSON: {e}"),
        })?;
    match value.get("format").and_then(|f| f.as_str()) {
        Some(FORMAT_NAME) => {}
        _ => {
            return Err(FormatError::Foreign {
                path,
                detail: format!("no \"format\": \"{FORMAT_NAME}\" marker"),
            })
        }
    }
    let mut snap: CtprofSnapshot =
        serde_json::from_value(value).map_err(|e| FormatError::Foreign {
            path: path.clone(),
            detail: format!("unexpected field value: {e}"),
        })?;
    // Forward compatible: a newer schema loads; unknown fields are ignored
    // and fields this build expects but the file lacks take their default.
    let _newer = snap.schema_version > SCHEMA_VERSION;
    if snap.schema_version < 2 && snap.capabilities.is_none() {
        snap.capabilities = Some(crate::avail::infer_v1(&snap));
    }
    Ok(snap)
}

/// Reads a snapshot file.
pub fn load(path: &Path) -> Result<CtprofSnapshot, FormatError> {
    let bytes = std::fs::read(path).map_err(|source| FormatError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    decode(&bytes, path)
}

#[cfg(test)]
mod tests;
