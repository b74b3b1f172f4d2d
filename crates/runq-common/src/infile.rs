//! Reading a file a user names on the command line (a saved run, a
//! snapshot, an export, a perf script): only a regular file, and no more
//! of it than a stated maximum. A FIFO would block forever, a device such
//! as `/dev/zero` never ends, and a directory is not a file: each is
//! refused with a line that names the path and what it is.
//!
//! The file is opened with `O_NONBLOCK` (opening a FIFO with no writer
//! then returns at once) and judged on the descriptor's `fstat`, so what
//! is checked is what is read.
//!
//! A stream read line by line instead (standard input, perf script text)
//! goes through [`LineCapped`], which bounds each line.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why an input file was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// It could not be opened or read.
    #[error("cannot read {}: {source}", shown(path))]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// It is not a regular file.
    #[error(
        "{} is {kind}, not a file; give the path of a regular file",
        shown(path)
    )]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is instead ("a directory", "a FIFO (named pipe)", ...).
        kind: FileKind,
    },
    /// It is larger than the reader accepts.
    #[error("{} is {}, larger than the {} {what} can be; is it the right file?", shown(path), mib(*size), mib(*max))]
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

/// A path as an error names it: its control characters escaped (a file
/// found in a directory can be named anything).
fn shown(path: &Path) -> String {
    crate::text::printable(&path.display().to_string()).into_owned()
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

/// A line-oriented text stream (standard input, a pipe, a file streamed
/// rather than read whole) that ends in an [`io::ErrorKind::InvalidData`]
/// error, instead of growing a reader's buffers without limit, on a line
/// longer than its maximum or, when set, on more indented lines in a row
/// (lines that begin with a space or a tab: the frames of one `perf
/// script` sample) than [`LineCapped::indented_run`] allows. A stream of
/// any length is read; what a line-by-line reader holds at once is bounded.
pub struct LineCapped<R> {
    inner: R,
    max_line: u64,
    max_run: u64,
    /// Bytes of the current line so far.
    line: u64,
    /// Indented lines in a row, the current one included.
    run: u64,
}

impl<R> LineCapped<R> {
    /// `inner`, refusing a line longer than `max_line` bytes (its newline
    /// not counted).
    pub fn new(inner: R, max_line: u64) -> Self {
        LineCapped {
            inner,
            max_line,
            max_run: u64::MAX,
            line: 0,
            run: 0,
        }
    }

    /// Also refuses more than `max_run` indented lines in a row (an empty
    /// or unindented line ends a run).
    pub fn indented_run(mut self, max_run: u64) -> Self {
        self.max_run = max_run;
        self
    }

    /// Follows the lines of `data`, the next bytes of the stream.
    fn scan(&mut self, data: &[u8]) -> io::Result<()> {
        for (i, seg) in data.split(|&b| b == b'\n').enumerate() {
            if i > 0 {
                // A newline ended the line before; an empty one ends a run.
                if self.line == 0 {
                    self.run = 0;
                }
                self.line = 0;
            }
            if self.line == 0 && !seg.is_empty() {
                self.run = if matches!(seg[0], b' ' | b'\t') {
                    self.run + 1
                } else {
                    0
                };
                if self.run > self.max_run {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("more than {} indented lines in a row", self.max_run),
                    ));
                }
            }
            self.line += seg.len() as u64;
            if self.line > self.max_line {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a line longer than {}", mib(self.max_line)),
                ));
            }
        }
        Ok(())
    }
}

impl<R: Read> Read for LineCapped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.scan(&buf[..n])?;
        Ok(n)
    }
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
    fn a_path_with_control_characters_is_named_printably() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("evil\x1b[2J\n.json");
        std::fs::create_dir(&p).unwrap();
        let e = read_bytes(&p, 1 << 20, "a saved run")
            .unwrap_err()
            .to_string();
        assert!(e.contains("evil\\x1b[2J\\n.json is a directory"), "{e}");
        assert!(!e.contains(['\x1b', '\n']), "{e:?}");
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

    /// Reads `input` through a pipe, as standard input would be, line by
    /// line through [`LineCapped`]; returns the lines read and the error.
    fn through_pipe(input: Vec<u8>, max_line: u64, max_run: u64) -> (usize, Option<io::Error>) {
        use std::io::{BufRead, BufReader, Write};
        let (r, mut w) = io::pipe().unwrap();
        let writer = std::thread::spawn(move || {
            // The reader may stop early: a broken pipe is expected then.
            let _ = w.write_all(&input);
        });
        let mut lines = 0;
        let mut err = None;
        for line in BufReader::new(LineCapped::new(r, max_line).indented_run(max_run)).lines() {
            match line {
                Ok(_) => lines += 1,
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        writer.join().unwrap();
        (lines, err)
    }

    #[test]
    fn a_piped_line_over_the_maximum_is_refused_before_it_is_held() {
        // 8 MiB without a newline, refused at 64 KiB.
        let (lines, err) = through_pipe(vec![0; 8 << 20], 64 << 10, u64::MAX);
        assert_eq!(lines, 0);
        let err = err.expect("an error");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert_eq!(err.to_string(), "a line longer than 64 KiB");
    }

    #[test]
    fn a_long_stream_of_short_lines_is_read_whole() {
        let mut input = b"header\n".to_vec();
        input.extend(b"\tframe\n".repeat(1000));
        input.extend(b"\nheader\n\tframe\n".repeat(50_000));
        let (lines, err) = through_pipe(input, 16, 1000);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(lines, 1001 + 150_000);
    }

    #[test]
    fn too_many_indented_lines_in_a_row_are_refused() {
        let mut input = b"header\n".to_vec();
        input.extend(b" f\n".repeat(1001));
        let (lines, err) = through_pipe(input, 16, 1000);
        // The error comes with the read that holds the 1001st frame.
        assert!(lines <= 1001, "{lines}");
        assert_eq!(
            err.expect("an error").to_string(),
            "more than 1000 indented lines in a row"
        );
    }

    #[test]
    fn a_line_exactly_at_the_maximum_passes_across_reads() {
        let mut r = LineCapped::new(&b""[..], 4);
        assert!(r.scan(b"ab").is_ok() && r.scan(b"cd\nabcd").is_ok());
        assert!(r.scan(b"e").is_err());
    }
}
