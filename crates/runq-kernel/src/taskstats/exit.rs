//! Taskstats exit notifications: a socket registered with
//! `TASKSTATS_CMD_ATTR_REGISTER_CPUMASK` receives one `struct taskstats`
//! per exiting task on the listed CPUs (needs `CAP_NET_ADMIN`), so threads
//! that start and end between two captures are not lost.

use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use super::{attrs, parse_taskstats, reply_attrs, QueryError, Taskstats, TaskstatsClient};

const TASKSTATS_CMD_ATTR_REGISTER_CPUMASK: u16 = 3;
const TASKSTATS_TYPE_STATS: u16 = 3;
const TASKSTATS_TYPE_AGGR_PID: u16 = 4;
const NLMSG_HDR: usize = 16;

/// Byte offsets of the identity and CPU-time fields of `struct taskstats`.
mod off {
    pub const CPU_RUN_VIRTUAL: usize = 72;
    pub const COMM: usize = 80;
    pub const PID: usize = 128;
    pub const UTIME_US: usize = 152;
    pub const STIME_US: usize = 160;
    pub const TGID: usize = 368;
}

/// One exited task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExitRecord {
    /// Thread id.
    pub pid: u32,
    /// Thread-group id.
    pub tgid: u32,
    /// Thread name at exit.
    pub comm: String,
    /// On-CPU time in ns (`se.sum_exec_runtime`; falls back to
    /// utime + stime when the kernel leaves it zero).
    pub cpu_ns: u64,
    /// Delay accounting and watermarks.
    pub stats: Taskstats,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map_or(0, |s| u64::from_ne_bytes(s.try_into().unwrap_or([0; 8])))
}

/// Decodes the `struct taskstats` of an exit notification.
pub fn parse_exit_stats(payload: &[u8]) -> Option<ExitRecord> {
    let stats = parse_taskstats(payload)?;
    let comm = payload.get(off::COMM..off::COMM + 32).unwrap_or(&[]);
    let end = comm.iter().position(|&c| c == 0).unwrap_or(comm.len());
    let precise = u64_at(payload, off::CPU_RUN_VIRTUAL);
    let ticks_us = u64_at(payload, off::UTIME_US) + u64_at(payload, off::STIME_US);
    Some(ExitRecord {
        pid: u32_at(payload, off::PID),
        tgid: u32_at(payload, off::TGID),
        comm: String::from_utf8_lossy(&comm[..end]).into_owned(),
        cpu_ns: if precise > 0 {
            precise
        } else {
            ticks_us * 1000
        },
        stats,
    })
}

/// Decodes one notification message: the per-thread record (the
/// thread-group aggregate that follows a process's last thread is skipped,
/// so nothing is counted twice).
pub fn parse_exit_message(msg: &[u8]) -> Option<ExitRecord> {
    let body = reply_attrs(msg).ok()?;
    attrs(body)
        .filter(|(ty, _)| *ty == TASKSTATS_TYPE_AGGR_PID)
        .flat_map(|(_, p)| attrs(p))
        .find(|(ty, _)| *ty == TASKSTATS_TYPE_STATS)
        .and_then(|(_, s)| parse_exit_stats(s))
}

impl TaskstatsClient {
    /// Registers this socket for the exit records of tasks running on
    /// `cpulist` (`0-1`), waiting for the kernel's acknowledgement. The
    /// socket should then be used only for [`TaskstatsClient::recv_exits`].
    pub fn register_exits(&mut self, cpulist: &str) -> Result<(), QueryError> {
        let mut value = cpulist.as_bytes().to_vec();
        value.push(0);
        self.seq = self.seq.wrapping_add(1);
        let mut req = super::build_request(
            self.family,
            super::TASKSTATS_CMD_GET,
            self.seq,
            TASKSTATS_CMD_ATTR_REGISTER_CPUMASK,
            &value,
        );
        let flags = (libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16;
        req[6..8].copy_from_slice(&flags.to_ne_bytes());
        let fd = self.fd.as_raw_fd();
        super::send_to_kernel(fd, &req)
            .map_err(|e| QueryError::from_errno(e.raw_os_error().unwrap_or(0)))?;
        grow_rcvbuf(fd, 8 << 20);
        loop {
            let n = self
                .recv_raw(Duration::from_secs(2))
                .map_err(|e| match e.raw_os_error() {
                    Some(e) => QueryError::from_errno(e),
                    None => QueryError::Other(0),
                })?;
            let msg = &self.buf[..n];
            if n >= NLMSG_HDR && u32_at(msg, 8) == self.seq {
                // An NLMSG_ERROR with error 0 is the acknowledgement.
                return reply_attrs(msg).map(|_| ()).or_else(|e| match e {
                    QueryError::Other(0) => Ok(()),
                    e => Err(e),
                });
            }
        }
    }

    fn recv_raw(&mut self, timeout: Duration) -> io::Result<usize> {
        let fd = self.fd.as_raw_fd();
        let tv = libc::timeval {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_usec: libc::suseconds_t::from(timeout.subsec_micros() as i32),
        };
        // SAFETY: tv is a valid timeval for SO_RCVTIMEO.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as u32,
            );
        }
        loop {
            // SAFETY: buf is a valid writable buffer.
            let n = unsafe { libc::recv(fd, self.buf.as_mut_ptr().cast(), self.buf.len(), 0) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// Waits up to `timeout` for exit records and appends them to `out`.
    /// Returns `Ok(false)` on a timeout, `Err` with `ENOBUFS` when the
    /// kernel dropped records because the socket buffer overflowed.
    pub fn recv_exits(&mut self, timeout: Duration, out: &mut Vec<ExitRecord>) -> io::Result<bool> {
        match self.recv_raw(timeout) {
            Ok(n) => {
                out.extend(parse_exit_message(&self.buf[..n]));
                Ok(true)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
}

/// Raises the receive buffer (`SO_RCVBUFFORCE` as root, else the capped
/// `SO_RCVBUF`) so that bursts of exits are not dropped.
fn grow_rcvbuf(fd: i32, bytes: i32) {
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: a plain int option.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&bytes as *const i32).cast(),
                std::mem::size_of::<i32>() as u32,
            )
        };
        if rc == 0 {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
