//! Pipes, socket pairs, and one-byte reads and writes on them.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Creates a pipe with both ends close-on-exec.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 returned two fresh descriptors we now own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A connected pair of Unix stream sockets, both close-on-exec: one
/// descriptor per side where a pipe each way would take two.
pub fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid two-element array.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: socketpair returned two fresh descriptors we now own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// What a one-byte read saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadByte {
    /// A byte arrived.
    Byte,
    /// End of file: every write end is closed (the writer is gone).
    Eof,
    /// A signal interrupted the read (the caller checks STOP).
    Interrupted,
}

/// Reads one byte.
pub fn read_byte(fd: &OwnedFd) -> io::Result<ReadByte> {
    let mut b = 0u8;
    // SAFETY: reading one byte into a valid buffer.
    let n = unsafe { libc::read(fd.as_raw_fd(), (&mut b as *mut u8).cast(), 1) };
    match n {
        1 => Ok(ReadByte::Byte),
        0 => Ok(ReadByte::Eof),
        _ => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(ReadByte::Interrupted)
            } else {
                Err(e)
            }
        }
    }
}

/// Writes one byte; `false` when the reader is gone or the call was
/// interrupted.
pub fn write_byte(fd: &OwnedFd) -> bool {
    let b = 1u8;
    // SAFETY: writing one byte from a valid buffer.
    unsafe { libc::write(fd.as_raw_fd(), (&b as *const u8).cast(), 1) == 1 }
}

/// What a stamp read saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadStamp {
    /// A message arrived with its writer's stamp.
    Stamp(u64),
    /// End of file: every write end is closed (the writer is gone).
    Eof,
    /// A signal interrupted the read (the caller checks STOP).
    Interrupted,
}

/// Reads one 8-byte message: its writer's stamp (see [`write_stamp`]).
/// A pipe carrying only whole 8-byte writes (atomic below `PIPE_BUF`)
/// never returns part of one; a short read counts as a message without a
/// stamp (0).
pub fn read_stamp(fd: &OwnedFd) -> io::Result<ReadStamp> {
    let mut b = [0u8; 8];
    // SAFETY: reading at most 8 bytes into a valid 8-byte buffer.
    let n = unsafe { libc::read(fd.as_raw_fd(), b.as_mut_ptr().cast(), 8) };
    match n {
        8 => Ok(ReadStamp::Stamp(u64::from_ne_bytes(b))),
        0 => Ok(ReadStamp::Eof),
        1..=7 => Ok(ReadStamp::Stamp(0)),
        _ => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(ReadStamp::Interrupted)
            } else {
                Err(e)
            }
        }
    }
}

/// Writes one 8-byte message holding `stamp` (the writer's clock reading
/// just before the write, which wakes the reader); `false` when the
/// reader is gone or the call was interrupted.
pub fn write_stamp(fd: &OwnedFd, stamp: u64) -> bool {
    let b = stamp.to_ne_bytes();
    // SAFETY: writing 8 bytes from a valid 8-byte buffer.
    unsafe { libc::write(fd.as_raw_fd(), b.as_ptr().cast(), 8) == 8 }
}

/// What an inherited descriptor of runq's probes links to: a BPF link or
/// program, or a perf event (a classic tracepoint's attachment).
const PROBE_FDS: [&str; 4] = [
    "anon_inode:bpf_link",
    "anon_inode:bpf-link",
    "anon_inode:bpf-prog",
    "anon_inode:[perf_event]",
];

/// Closes, in a forked worker, the descriptors of runq's BPF probes it
/// inherited: a probe stays attached while any process holds its link or
/// perf event, so a worker's copy would keep a program runq detached (the
/// recorder's switch to sampling) running on every event until the
/// worker ends. Returns how many it closed.
pub fn close_inherited_probes() -> usize {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return 0;
    };
    let fds: Vec<i32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    let mut closed = 0;
    for fd in fds {
        let target = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap_or_default();
        if PROBE_FDS.iter().any(|p| target.as_os_str() == *p) {
            // SAFETY: closing a descriptor this process holds and never
            // uses (its owner, the parent's loader, stays in the parent).
            unsafe { libc::close(fd) };
            closed += 1;
        }
    }
    closed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_sees_a_byte_then_eof_once_the_writer_closes() {
        let (rx, tx) = pipe().unwrap();
        assert!(write_byte(&tx));
        assert_eq!(read_byte(&rx).unwrap(), ReadByte::Byte);
        drop(tx);
        assert_eq!(read_byte(&rx).unwrap(), ReadByte::Eof);
    }

    #[test]
    fn a_stamp_crosses_the_pipe_whole() {
        let (rx, tx) = pipe().unwrap();
        assert!(write_stamp(&tx, 0x0123_4567_89ab_cdef));
        assert!(write_stamp(&tx, 42));
        assert_eq!(
            read_stamp(&rx).unwrap(),
            ReadStamp::Stamp(0x0123_4567_89ab_cdef)
        );
        assert_eq!(read_stamp(&rx).unwrap(), ReadStamp::Stamp(42));
        drop(tx);
        assert_eq!(read_stamp(&rx).unwrap(), ReadStamp::Eof);
    }
}
