//! Reads small kernel files into one reused buffer with raw `open`/`read`.

use std::ffi::CStr;

/// Reads files into an internal buffer that is reused from call to call.
///
/// Paths are assembled in a second reused buffer, so reading thousands of
/// `/proc` files costs no allocation once the buffers have grown.
#[derive(Debug, Default)]
pub struct FileReader {
    buf: Vec<u8>,
    path: Vec<u8>,
}

/// Outcome of one read that did not produce content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// The file does not exist (or the task exited: `ENOENT`/`ESRCH`).
    Missing,
    /// Permission denied (`EACCES`/`EPERM`).
    Denied,
    /// Any other error number.
    Other(i32),
}

impl FileReader {
    /// A reader with a 4 KiB buffer.
    pub fn new() -> Self {
        FileReader {
            buf: Vec::with_capacity(4096),
            path: Vec::with_capacity(128),
        }
    }

    /// Reads the file at the path made of `parts` concatenated.
    pub fn read_parts(&mut self, parts: &[&[u8]]) -> Result<&[u8], ReadError> {
        let path = self.c_path(parts)?;
        // SAFETY: path is NUL-terminated; flags are plain constants.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        read_fd(fd, &mut self.buf).map(|n| &self.buf[..n])
    }

    /// Reads the file at the path made of `parts` concatenated, relative to
    /// the open directory `dirfd` (`openat`): the directory's own path is
    /// not walked again for each of its files.
    pub fn read_at(
        &mut self,
        dirfd: &std::os::fd::OwnedFd,
        parts: &[&[u8]],
    ) -> Result<&[u8], ReadError> {
        use std::os::fd::AsRawFd;
        let name = self.c_path(parts)?;
        // SAFETY: dirfd is open; name is NUL-terminated.
        let fd = unsafe {
            libc::openat(
                dirfd.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        read_fd(fd, &mut self.buf).map(|n| &self.buf[..n])
    }

    /// `parts` concatenated and NUL-terminated in the reused path buffer.
    fn c_path(&mut self, parts: &[&[u8]]) -> Result<&CStr, ReadError> {
        self.path.clear();
        for p in parts {
            self.path.extend_from_slice(p);
        }
        self.path.push(0);
        CStr::from_bytes_until_nul(&self.path).map_err(|_| ReadError::Other(libc::EINVAL))
    }

    /// Opens the directory made of `parts` concatenated as an `O_PATH`
    /// descriptor for [`Self::read_at`].
    pub fn open_dir(&mut self, parts: &[&[u8]]) -> Result<std::os::fd::OwnedFd, ReadError> {
        use std::os::fd::FromRawFd;
        let c = self.c_path(parts)?;
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
        // SAFETY: c is NUL-terminated.
        let fd = unsafe { libc::open(c.as_ptr(), flags) };
        if fd < 0 {
            return Err(classify(errno()));
        }
        // SAFETY: fd is a fresh descriptor we own.
        Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
    }

    /// Reads the file at `path`.
    pub fn read(&mut self, path: &std::path::Path) -> Result<&[u8], ReadError> {
        use std::os::unix::ffi::OsStrExt;
        self.read_parts(&[path.as_os_str().as_bytes()])
    }
}

fn classify(errno: i32) -> ReadError {
    match errno {
        libc::ENOENT | libc::ESRCH | libc::ENOTDIR => ReadError::Missing,
        libc::EACCES | libc::EPERM => ReadError::Denied,
        e => ReadError::Other(e),
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Reads all of the just-opened `fd` (negative: the open failed) into
/// `buf`, then closes it.
fn read_fd(fd: i32, buf: &mut Vec<u8>) -> Result<usize, ReadError> {
    if fd < 0 {
        return Err(classify(errno()));
    }
    let cap = buf.capacity().max(4096);
    buf.resize(cap, 0);
    let mut len = 0usize;
    let result = loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let spare = &mut buf[len..];
        let spare_len = spare.len();
        // SAFETY: fd is open; spare is a valid writable slice.
        let n = unsafe { libc::read(fd, spare.as_mut_ptr().cast(), spare.len()) };
        if n < 0 {
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            break Err(classify(e));
        }
        if n == 0 {
            break Ok(len);
        }
        len += n as usize;
        // procfs single-record files hand over everything that fits in one
        // read, so a short read is the end: skip the extra read for EOF.
        if (n as usize) < spare_len {
            break Ok(len);
        }
    };
    // SAFETY: fd was opened above and is closed once.
    unsafe { libc::close(fd) };
    buf.truncate(len);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_classifies() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let big = vec![b'x'; 10_000];
        std::fs::write(&p, &big).unwrap();
        let mut r = FileReader::new();
        assert_eq!(r.read(&p).unwrap().len(), 10_000);
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(r.read(&p).unwrap(), b"abc");
        assert_eq!(r.read(&dir.path().join("nope")), Err(ReadError::Missing));
        assert!(r.read_parts(&[b"/proc/self/", b"stat"]).is_ok());
        let d = r.open_dir(&[b"/proc/self"]).unwrap();
        assert!(!r.read_at(&d, &[b"stat"]).unwrap().is_empty());
        assert_eq!(r.read_at(&d, &[b"no-such-file"]), Err(ReadError::Missing));
        let tasks = r.open_dir(&[b"/proc/self/task"]).unwrap();
        let me = format!("{}/", std::process::id());
        let stat = r.read_at(&tasks, &[me.as_bytes(), b"stat"]).unwrap();
        assert!(stat.starts_with(me.trim_end_matches('/').as_bytes()));
        assert_eq!(
            r.open_dir(&[b"/nonexistent"]).unwrap_err(),
            ReadError::Missing
        );
    }
}
