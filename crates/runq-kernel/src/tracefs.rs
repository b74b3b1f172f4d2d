//! tracefs, where the kernel lists its tracepoints (and their ids, which
//! attaching a BPF program to a classic tracepoint needs). Fresh hosts
//! often have it unmounted; like perf, runq mounts it when it may.

use std::io;
use std::path::{Path, PathBuf};

/// Where tracefs is looked for, in order (the second is the old place,
/// under debugfs).
pub const TRACEFS_PATHS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// How tracefs was made available.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tracefs {
    /// It was mounted already.
    Mounted(PathBuf),
    /// runq mounted it (it stays mounted, as perf leaves it).
    MountedNow(PathBuf),
}

/// Why tracefs is not available.
#[derive(Debug, thiserror::Error)]
pub enum TracefsError {
    /// Not mounted, and mounting needs privileges this process lacks.
    #[error("tracefs is not mounted and mounting it needs CAP_SYS_ADMIN: run `sudo mount -t tracefs nodev /sys/kernel/tracing` (or run as root)")]
    NotPermitted,
    /// Mounting failed for another reason (no tracefs in this kernel, say).
    #[error("tracefs is not mounted and mounting it at /sys/kernel/tracing failed: {0} (does the kernel have CONFIG_TRACING?)")]
    MountFailed(io::Error),
}

/// True when `dir` is a mounted tracefs (it lists its `events`).
pub fn is_tracefs(dir: &Path) -> bool {
    dir.join("events").is_dir()
}

/// The mounted tracefs, if any.
pub fn find() -> Option<PathBuf> {
    TRACEFS_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|p| is_tracefs(p))
}

/// Returns the mounted tracefs, mounting it at /sys/kernel/tracing first
/// when it is not.
pub fn ensure_mounted() -> Result<Tracefs, TracefsError> {
    if let Some(p) = find() {
        return Ok(Tracefs::Mounted(p));
    }
    let target = PathBuf::from(TRACEFS_PATHS[0]);
    mount_tracefs(&target)?;
    Ok(Tracefs::MountedNow(target))
}

fn mount_tracefs(target: &Path) -> Result<(), TracefsError> {
    use std::os::unix::ffi::OsStrExt;
    let c = |s: &[u8]| std::ffi::CString::new(s).expect("no NUL in a constant path");
    let (src, dst, fstype) = (c(b"nodev"), c(target.as_os_str().as_bytes()), c(b"tracefs"));
    // SAFETY: valid NUL-terminated strings; no data argument.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            dst.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => Err(TracefsError::NotPermitted),
        _ => Err(TracefsError::MountFailed(err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_without_events_is_not_tracefs() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_tracefs(dir.path()));
        std::fs::create_dir(dir.path().join("events")).unwrap();
        assert!(is_tracefs(dir.path()));
    }

    #[test]
    fn errors_say_how_to_fix_them() {
        let msg = TracefsError::NotPermitted.to_string();
        assert!(
            msg.contains("mount -t tracefs nodev /sys/kernel/tracing"),
            "{msg}"
        );
    }
}
