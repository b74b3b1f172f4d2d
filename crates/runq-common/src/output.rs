//! Standard output for every command, with one policy for a reader that
//! goes away early (`runq … | head`): the first EPIPE closes stdout for
//! the rest of the process, with no panic and no message, and later
//! writes are no-ops, so a command still finishes its own cleanup. Any
//! other write error (a full disk) closes it too, is reported once on
//! stderr, and makes the command fail ([`stdout_failed`]).

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether stdout has been closed (a failed write) for this process.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether a write to stdout failed with an error other than EPIPE.
static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);

/// True when a write to stdout failed with an error other than a closed
/// pipe: the output is incomplete, and the command should not exit 0.
pub fn stdout_failed() -> bool {
    STDOUT_FAILED.load(Ordering::Relaxed)
}

/// Process stdout under the closed-pipe policy of this module. Every
/// write and flush reports success: a failure only closes it.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stdout;

impl Stdout {
    /// A handle on stdout (all handles share one closed state).
    pub fn new() -> Self {
        Stdout
    }

    /// Runs `op` on the locked stdout under the policy.
    fn with(op: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
        let mut quiet = Quiet::new(io::stdout().lock(), &STDOUT_CLOSED, "stdout");
        quiet.failed = Some(&STDOUT_FAILED);
        quiet.run(op)
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Self::with(|out| out.write_all(buf)).map(|()| buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Self::with(|out| out.flush())
    }

    fn write_fmt(&mut self, args: fmt::Arguments<'_>) -> io::Result<()> {
        Self::with(|out| out.write_fmt(args))
    }
}

/// Writes formatted text to stdout and flushes it (see the module doc);
/// the CLI's `out!` and `outln!` macros go through it.
pub fn write_stdout(args: fmt::Arguments<'_>) {
    let mut out = Stdout;
    let _ = out.write_fmt(args).and_then(|()| out.flush());
}

/// Writes one line to stderr; a closed stderr (`runq … 2>&1 | head -1`)
/// is a quiet end, never a panic.
pub fn eprint_line(line: &str) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{line}").and_then(|()| err.flush());
}

/// A writer under the policy: `closed` is its shared closed state and
/// `name` names it in the one error report.
struct Quiet<'a, W> {
    inner: W,
    closed: &'a AtomicBool,
    name: &'static str,
    /// Set by an error other than EPIPE.
    failed: Option<&'a AtomicBool>,
}

impl<'a, W: Write> Quiet<'a, W> {
    fn new(inner: W, closed: &'a AtomicBool, name: &'static str) -> Self {
        Quiet {
            inner,
            closed,
            name,
            failed: None,
        }
    }

    /// Runs `op` unless closed; its failure closes the writer (reported
    /// once unless EPIPE) and is not passed on.
    fn run(mut self, op: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
        if self.closed.load(Ordering::Relaxed) {
            return Ok(());
        }
        if let Err(e) = op(&mut self.inner) {
            let first = !self.closed.swap(true, Ordering::Relaxed);
            if e.kind() != io::ErrorKind::BrokenPipe {
                if let Some(failed) = self.failed {
                    failed.store(true, Ordering::Relaxed);
                }
                if first {
                    eprint_line(&format!("runq: writing to {}: {e}", self.name));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::Read;
    use std::os::fd::FromRawFd;

    /// A pipe's (read end, write end).
    fn pipe() -> (File, File) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 returns.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: both descriptors are new and owned by nothing else.
        unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
    }

    /// Writes `text` to `file` under the policy with `closed`.
    fn write(file: &File, closed: &AtomicBool, text: &str) -> io::Result<()> {
        Quiet::new(file, closed, "test").run(|w| w.write_all(text.as_bytes()))
    }

    #[test]
    fn a_full_disk_fails_the_command_and_a_reader_that_left_does_not() {
        let (failed, closed) = (AtomicBool::new(false), AtomicBool::new(false));
        let full = File::options().write(true).open("/dev/full").unwrap();
        let mut quiet = Quiet::new(&full, &closed, "test");
        quiet.failed = Some(&failed);
        quiet
            .run(|w| w.write_all(b"x").and_then(|()| w.flush()))
            .unwrap();
        assert!(failed.load(Ordering::Relaxed), "ENOSPC fails the command");
        let (read, write_end) = pipe();
        drop(read);
        let (failed, closed) = (AtomicBool::new(false), AtomicBool::new(false));
        let mut quiet = Quiet::new(&write_end, &closed, "test");
        quiet.failed = Some(&failed);
        quiet.run(|w| w.write_all(b"x")).unwrap();
        assert!(!failed.load(Ordering::Relaxed), "EPIPE is a quiet end");
    }

    #[test]
    fn an_open_pipe_gets_the_bytes() {
        let (mut read, write_end) = pipe();
        let closed = AtomicBool::new(false);
        write(&write_end, &closed, "hello").unwrap();
        drop(write_end);
        let mut got = String::new();
        read.read_to_string(&mut got).unwrap();
        assert_eq!(got, "hello");
        assert!(!closed.load(Ordering::Relaxed));
    }

    #[test]
    fn a_pipe_whose_reader_left_closes_quietly_for_good() {
        // Rust ignores SIGPIPE in its programs, so the write sees EPIPE.
        let (read, write_end) = pipe();
        drop(read);
        let closed = AtomicBool::new(false);
        write(&write_end, &closed, "lost").unwrap();
        assert!(closed.load(Ordering::Relaxed));
        // Later writes do not reach the pipe (each would be EPIPE again).
        let mut raw = &write_end;
        assert_eq!(
            raw.write(b"x").unwrap_err().kind(),
            io::ErrorKind::BrokenPipe
        );
        let mut touched = false;
        Quiet::new(&write_end, &closed, "test")
            .run(|_| {
                touched = true;
                Ok(())
            })
            .unwrap();
        assert!(!touched, "a closed writer still wrote");
    }

    #[test]
    fn another_error_closes_it_too() {
        let (_read, write_end) = pipe();
        let closed = AtomicBool::new(false);
        let failing = Quiet::new(&write_end, &closed, "test");
        failing.run(|_| Err(io::Error::other("disk full"))).unwrap();
        assert!(closed.load(Ordering::Relaxed));
        write(&write_end, &closed, "after").unwrap();
    }

    /// The child of [`stdout_whose_reader_left_ends_quietly`]: stdout
    /// becomes a pipe with no reader, then every kind of write is tried.
    /// Exits at once (42: all quiet) so the harness never prints.
    #[test]
    fn stdout_child() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        let (read, write_end) = pipe();
        drop(read);
        // SAFETY: fd 1 is replaced by a valid descriptor.
        assert_eq!(
            unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&write_end), 1) },
            1
        );
        write_stdout(format_args!("first {}\n", 1));
        let closed = STDOUT_CLOSED.load(Ordering::Relaxed);
        let mut out = Stdout::new();
        let later = out.write_all(b"second\n").and_then(|()| out.flush());
        std::process::exit(if closed && later.is_ok() { 42 } else { 1 });
    }

    /// Names the child run of [`stdout_child`].
    const CHILD: &str = "RUNQ_COMMON_STDOUT_CHILD";

    #[test]
    fn stdout_whose_reader_left_ends_quietly() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "output::tests::stdout_child", "--test-threads=1"])
            .env(CHILD, "1")
            .stdout(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(42), "{err}");
        assert!(err.is_empty(), "{err}");
    }
}
