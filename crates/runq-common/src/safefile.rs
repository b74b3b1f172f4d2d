//! Safe file writes for a tool that runs as root in shared directories
//! (the lesson of below's CVE-2025-27591): never follow a symlink, never
//! overwrite another user's file, never leave a partial file behind.
//! Every file any runq tool writes goes through here: `run --output` and
//! `--junit`, ctprof's snapshots and exports, collatz's sweep files, hud's
//! exports and flame graphs.
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
        libc::S_IFDIR => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{shown} is a directory; give a file path"),
        )),
        _ => Err(refuse(format!(
            "{shown} is not a regular file; refusing to replace it"
        ))),
    }
}

fn temp_name(name: &[u8]) -> Vec<u8> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let mut t = b".".to_vec();
    t.extend_from_slice(name);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
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

/// A file being written to a temporary name beside its destination; it
/// takes the destination's name only on [`AtomicFile::commit`], and is
/// removed if dropped before that (an error or an interrupted write leaves
/// nothing behind).
pub struct AtomicFile {
    dir: OwnedFd,
    tmp: CString,
    name: CString,
    replace: Replace,
    file: Option<std::fs::File>,
}

impl AtomicFile {
    /// Checks the destination (see the module doc) and creates the
    /// temporary file next to it.
    pub fn create(path: &Path, replace: Replace) -> io::Result<Self> {
        let (dir, name) = open_parent(path)?;
        check_target(&dir, &name, path, replace)?;
        let tmp = cstr(&temp_name(name.as_bytes()))?;
        let file = create_excl(&dir, &tmp)?;
        Ok(Self {
            dir,
            tmp,
            name,
            replace,
            file: Some(file),
        })
    }

    /// Syncs the bytes and renames the file into place.
    pub fn commit(mut self) -> io::Result<()> {
        let file = self.file.take().expect("an AtomicFile is committed once");
        file.sync_all()?;
        drop(file);
        rename_in(&self.dir, &self.tmp, &self.name, self.replace)?;
        // Renamed: nothing is left to remove on drop.
        self.tmp = CString::default();
        // Make the rename durable; a failure here does not undo the write.
        let _ = fsync_dir(&self.dir);
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.as_mut().map_or(Ok(0), |f| f.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), |f| f.flush())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.tmp.is_empty() {
            // SAFETY: valid fd and C string.
            unsafe { libc::unlinkat(self.dir.as_raw_fd(), self.tmp.as_ptr(), 0) };
        }
    }
}

/// Writes `bytes` to `path` atomically and safely (see the module doc).
pub fn write_atomic(path: &Path, bytes: &[u8], replace: Replace) -> io::Result<()> {
    let mut f = AtomicFile::create(path, replace)?;
    f.write_all(bytes)?;
    f.commit()
}

/// Checks, before long work, that `path` can be written later: its
/// directory exists and is writable, and nothing is at the path that
/// [`write_atomic`] would refuse (a symlink, a directory, another user's
/// file). Creates nothing.
pub fn check_destination(path: &Path, replace: Replace) -> io::Result<()> {
    let (dir, name) = open_parent(path)?;
    check_target(&dir, &name, path, replace)?;
    // SAFETY: valid fd and C string.
    let rc = unsafe { libc::faccessat(dir.as_raw_fd(), c".".as_ptr(), libc::W_OK, 0) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The first pair of outputs that name one file, as `(flag, flag)`:
/// two paths are the same when their directories are the same inode and
/// their file names are equal (`out.json` and `./out.json` collide).
pub fn same_destination<'a>(outputs: &[(&'a str, &Path)]) -> Option<(&'a str, &'a str)> {
    let keys: Vec<_> = outputs.iter().map(|(_, p)| destination_key(p)).collect();
    for i in 0..outputs.len() {
        for j in i + 1..outputs.len() {
            if keys[i].is_some() && keys[i] == keys[j] {
                return Some((outputs[i].0, outputs[j].0));
            }
        }
    }
    None
}

/// (device, inode) of the path's directory and its file name.
fn destination_key(path: &Path) -> Option<(u64, u64, Vec<u8>)> {
    use std::os::unix::fs::MetadataExt;
    let name = path.file_name()?.as_bytes().to_vec();
    let meta = std::fs::metadata(parent_of(path)).ok()?;
    Some((meta.dev(), meta.ino(), name))
}

fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Opens the directory of `path` and returns it with the file's name.
fn open_parent(path: &Path) -> io::Result<(OwnedFd, CString)> {
    let file_name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let dir = open_dir(parent_of(path))?;
    Ok((dir, cstr(file_name.as_bytes())?))
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
