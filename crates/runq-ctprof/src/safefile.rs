//! Safe file writes for a tool that runs as root in shared directories
//! (the lesson of below's CVE-2025-27591): never follow a symlink, never
//! overwrite another user's file, never leave a partial file behind.
//!
//! The bytes go to a fresh temporary file created with
//! `O_CREAT|O_EXCL|O_NOFOLLOW` next to the destination (opened relative to
//! the directory's descriptor), are synced, and are renamed into place in
//! the same directory. A symlink or a file of another owner at the
//! destination is refused; a symlink planted after the check is replaced by
//! the rename, never followed.
//!
//! Why not `tempfile::NamedTempFile::new_in(dir)` + `persist` (checked
//! against tempfile 3.27): its create is `create_new` (`O_CREAT|O_EXCL`,
//! which never follows a symlink) and `persist` is `rename(2)` (which
//! replaces a symlink at the destination), so those two guarantees hold.
//! But both calls take paths and resolve the directory again each time,
//! from the process's working directory. Here the directory is opened
//! once and the check, the create and the rename all go through that
//! descriptor (`fstatat`/`openat`/`renameat2`), so they act on one
//! directory inode. With tempfile, whoever owns a directory on the path
//! could swap it for a symlink between the check and the create or the
//! rename, and root would write the file into a directory of their
//! choosing: the class of bug this module exists to prevent. tempfile
//! would also create the file 0600 (a snapshot is 0644), and the
//! destination check and the fsyncs would stay hand-written, so it would
//! replace only the temporary name, the create and the rename.

use std::ffi::CString;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// What may already exist at the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// A regular file owned by the effective user may be replaced.
    OwnFile,
    /// Nothing may exist there (`renameat2(RENAME_NOREPLACE)`).
    Never,
}

fn cstr(b: &[u8]) -> io::Result<CString> {
    CString::new(b).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))
}

fn refuse(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, msg)
}

fn open_dir(dir: &Path) -> io::Result<OwnedFd> {
    let c = cstr(dir.as_os_str().as_bytes())?;
    // SAFETY: c is a valid C string.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Checks what is at `name` in `dir` without following a symlink.
fn check_target(dir: &OwnedFd, name: &CString, shown: &Path, replace: Replace) -> io::Result<()> {
    // SAFETY: st is plain data filled by fstatat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd, C string and out-pointer.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::NotFound {
            Ok(())
        } else {
            Err(e)
        };
    }
    let shown = shown.display();
    match st.st_mode & libc::S_IFMT {
        libc::S_IFLNK => Err(refuse(format!(
            "{shown} is a symlink; refusing to write through it (remove it or choose another path)"
        ))),
        libc::S_IFREG if replace == Replace::Never => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{shown} already exists; refusing to overwrite it"),
        )),
        // SAFETY: geteuid has no preconditions.
        libc::S_IFREG if st.st_uid != unsafe { libc::geteuid() } => Err(refuse(format!(
            "{shown} belongs to uid {}; refusing to replace another user's file",
            st.st_uid
        ))),
        libc::S_IFREG => Ok(()),
        _ => Err(refuse(format!(
            "{shown} is not a regular file; refusing to replace it"
        ))),
    }
}

fn temp_name(name: &[u8]) -> Vec<u8> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let mut t = b".".to_vec();
    t.extend_from_slice(name);
    let nanos = runq_kernel::clock::unix_ns();
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    t.extend_from_slice(format!(".{}-{nanos:x}-{seq}.tmp", std::process::id()).as_bytes());
    t
}

fn create_excl(dir: &OwnedFd, name: &CString) -> io::Result<std::fs::File> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: valid fd and C string.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, 0o644 as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

fn rename_in(dir: &OwnedFd, from: &CString, to: &CString, replace: Replace) -> io::Result<()> {
    let flags = if replace == Replace::Never {
        libc::RENAME_NOREPLACE
    } else {
        0
    };
    let d = dir.as_raw_fd();
    // SAFETY: valid fds and C strings.
    let rc = unsafe { libc::renameat2(d, from.as_ptr(), d, to.as_ptr(), flags) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Writes `bytes` to `path` atomically and safely (see the module doc).
pub fn write_atomic(path: &Path, bytes: &[u8], replace: Replace) -> io::Result<()> {
    let file_name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let dir_path = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = open_dir(dir_path)?;
    let name = cstr(file_name.as_bytes())?;
    check_target(&dir, &name, path, replace)?;
    let tmp = cstr(&temp_name(file_name.as_bytes()))?;
    let mut f = create_excl(&dir, &tmp)?;
    let result = f
        .write_all(bytes)
        .and_then(|_| f.sync_all())
        .and_then(|_| rename_in(&dir, &tmp, &name, replace));
    if let Err(e) = result {
        // SAFETY: valid fd and C string.
        unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
        return Err(e);
    }
    // Make the rename durable; a failure here does not undo the write.
    let _ = fsync_dir(&dir);
    Ok(())
}

fn fsync_dir(dir: &OwnedFd) -> io::Result<()> {
    // SAFETY: valid fd.
    if unsafe { libc::fsync(dir.as_raw_fd()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
