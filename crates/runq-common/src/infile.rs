//! Reading a file a user names on the command line (a saved run, a
//! snapshot, an export, a perf script): only a regular file, and no more
//! of it than a stated maximum. A FIFO would block forever, a device such
//! as `/dev/zero` never ends, and a directory is not a file: each is
//! refused with a line that names the path and what it is.
//!
//! The file is opened with `O_NONBLOCK` (opening a FIFO with no writer
//! then returns at once) and judged on the descriptor's `fstat`, so what
//! is checked is what is read.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why an input file was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// It could not be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// It is not a regular file.
    #[error("{} is {kind}, not a file; give the path of a regular file", path.display())]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is instead ("a directory", "a FIFO (named pipe)", ...).
        kind: FileKind,
    },
    /// It is larger than the reader accepts.
    #[error("{} is {}, larger than the {} {what} can be; is it the right file?", path.display(), mib(*size), mib(*max))]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes (at least `max + 1` when it grew while read).
        size: u64,
        /// The largest accepted, in bytes.
        max: u64,
        /// What the file was expected to be ("a saved run").
        what: &'static str,
    },
}

/// What a path that is not a regular file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A directory.
    Directory,
    /// A FIFO (named pipe).
    Fifo,
    /// A character device (`/dev/zero`, a terminal).
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A Unix socket.
    Socket,
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO (named pipe)",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Socket => "a socket",
        })
    }
}

fn mib(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{} KiB", bytes.div_ceil(1024))
    } else {
        format!("{} MiB", bytes.div_ceil(1 << 20))
    }
}

fn kind_of(ft: std::fs::FileType) -> Option<FileKind> {
    if ft.is_file() {
        None
    } else if ft.is_dir() {
        Some(FileKind::Directory)
    } else if ft.is_fifo() {
        Some(FileKind::Fifo)
    } else if ft.is_char_device() {
        Some(FileKind::CharDevice)
    } else if ft.is_block_device() {
        Some(FileKind::BlockDevice)
    } else {
        Some(FileKind::Socket)
    }
}

/// Opens `path` for reading if it is a regular file (symlinks followed);
/// anything else is refused without blocking. For readers that stream a
/// file of any size (a regular file always ends).
pub fn open_regular(path: &Path) -> Result<File, InputError> {
    let io_err = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if let Some(kind) = kind_of(meta.file_type()) {
        return Err(InputError::NotRegular {
            path: path.to_path_buf(),
            kind,
        });
    }
    Ok(file)
}

/// The bytes of the regular file `path`, at most `max` of them; `what`
/// names the expected content in the error ("a saved run").
pub fn read_bytes(path: &Path, max: u64, what: &'static str) -> Result<Vec<u8>, InputError> {
    let file = open_regular(path)?;
    let too_large = |size| InputError::TooLarge {
        path: path.to_path_buf(),
        size,
        max,
        what,
    };
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > max {
        return Err(too_large(size));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| InputError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > max {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// The text of the regular file `path` (see [`read_bytes`]); bytes that
/// are not UTF-8 are an error naming the file.
pub fn read_text(path: &Path, max: u64, what: &'static str) -> Result<String, InputError> {
    let bytes = read_bytes(path, max, what)?;
    String::from_utf8(bytes).map_err(|e| InputError::Io {
        path: path.to_path_buf(),
        source: io::Error::new(io::ErrorKind::InvalidData, format!("not UTF-8 text ({e})")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        std::fs::write(&p, "{}\n").unwrap();
        assert_eq!(read_text(&p, 10, "a test file").unwrap(), "{}\n");
    }

    #[test]
    fn a_file_over_the_maximum_is_refused_with_both_sizes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big");
        std::fs::write(&p, vec![b'x'; 3000]).unwrap();
        let e = read_bytes(&p, 2048, "a saved run").unwrap_err();
        assert!(
            matches!(e, InputError::TooLarge { size: 3000, .. }),
            "{e:?}"
        );
        let text = e.to_string();
        assert!(text.contains("3 KiB") && text.contains("2 KiB"), "{text}");
        assert!(text.contains("a saved run"), "{text}");
    }

    #[test]
    fn dev_zero_is_refused_as_a_device_without_reading() {
        let e = read_bytes(Path::new("/dev/zero"), 1 << 30, "a saved run").unwrap_err();
        assert_eq!(
            e.to_string(),
            "/dev/zero is a character device, not a file; give the path of a regular file"
        );
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fifo");
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: c is a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = open_regular(&p).unwrap_err();
        assert!(
            matches!(
                e,
                InputError::NotRegular {
                    kind: FileKind::Fifo,
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn a_directory_is_named_as_one() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_text(dir.path(), 10, "a test file").unwrap_err();
        assert!(
            e.to_string()
                .ends_with("is a directory, not a file; give the path of a regular file"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_file_names_its_path() {
        let e = read_text(Path::new("/nonexistent/x.json"), 10, "a test file").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot read /nonexistent/x.json: "),
            "{e}"
        );
    }
}
