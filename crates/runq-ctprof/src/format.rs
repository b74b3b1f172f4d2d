//! The `.ctprof.zst` file: zstd (level 3) compressed JSON of a
//! [`CtprofSnapshot`], with a format marker and a schema version.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::model::{CtprofSnapshot, FORMAT_NAME, SCHEMA_VERSION};

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

/// Writes a snapshot to `path` (via a temporary file renamed into place, so
/// a failed write leaves nothing behind).
pub fn save(snapshot: &CtprofSnapshot, path: &Path) -> Result<u64, FormatError> {
    let io = |source| FormatError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = encode(snapshot).map_err(io)?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile_in(dir).map_err(io)?;
    let result = tmp.1.write_all(&bytes).and_then(|_| tmp.1.sync_all());
    if let Err(e) = result.and_then(|_| std::fs::rename(&tmp.0, path)) {
        let _ = std::fs::remove_file(&tmp.0);
        return Err(io(e));
    }
    Ok(bytes.len() as u64)
}

fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    let name = format!(
        ".ctprof-{}-{}.tmp",
        std::process::id(),
        crate::capture::now_unix_ns()
    );
    let p = dir.join(name);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)?;
    Ok((p, f))
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
