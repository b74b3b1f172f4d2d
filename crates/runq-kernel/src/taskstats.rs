//! The TASKSTATS generic-netlink family: per-task delay accounting (eight
//! categories of count / total / max / min) and memory watermarks.
//!
//! [`parse_taskstats`] decodes the kernel's `struct taskstats` by offset and
//! tolerates short (older or truncated) payloads: a field past the end reads
//! as zero. [`TaskstatsClient`] owns the netlink socket; querying needs
//! `CAP_NET_ADMIN`, and delay fields stay zero unless delay accounting is on
//! (`sysctl kernel.task_delayacct=1` or the `delayacct` boot flag).

use std::io;

/// One delay category: windows seen, their total, longest and shortest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DelayBucket {
    /// Number of delay windows.
    pub count: u64,
    /// Cumulative delay in ns.
    pub total_ns: u64,
    /// Longest single window in ns (kernels with taskstats v15+).
    pub max_ns: u64,
    /// Shortest non-zero window in ns; 0 means none seen (v15+).
    pub min_ns: u64,
}

/// The fields of `struct taskstats` ctprof keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Taskstats {
    /// The struct version the kernel filled in.
    pub version: u16,
    /// Waiting on a runqueue.
    pub cpu: DelayBucket,
    /// Synchronous block I/O.
    pub blkio: DelayBucket,
    /// Swap-in.
    pub swapin: DelayBucket,
    /// Direct reclaim.
    pub freepages: DelayBucket,
    /// Thrashing.
    pub thrashing: DelayBucket,
    /// Memory compaction.
    pub compact: DelayBucket,
    /// Write-protect copy faults (v13+).
    pub wpcopy: DelayBucket,
    /// IRQ time charged to the task (v14+).
    pub irq: DelayBucket,
    /// On-CPU time in ns (`cpu_run_virtual_total`: the scheduler's
    /// `sum_exec_runtime`, as `/proc/<tid>/schedstat`'s first field).
    pub run_virtual_ns: u64,
    /// RSS high-water mark in KiB.
    pub hiwater_rss_kb: u64,
    /// Virtual memory high-water mark in KiB.
    pub hiwater_vm_kb: u64,
}

/// Byte offsets of `struct taskstats` fields (x86_64 / aarch64 layout).
mod off {
    pub const CPU: (usize, usize) = (16, 24);
    pub const BLKIO: (usize, usize) = (32, 40);
    pub const SWAPIN: (usize, usize) = (48, 56);
    pub const RUN_VIRTUAL: usize = 72;
    pub const HIWATER_RSS: usize = 200;
    pub const HIWATER_VM: usize = 208;
    pub const FREEPAGES: (usize, usize) = (312, 320);
    pub const THRASHING: (usize, usize) = (328, 336);
    pub const COMPACT: (usize, usize) = (352, 360);
    pub const WPCOPY: (usize, usize) = (400, 408);
    pub const IRQ: (usize, usize) = (416, 424);
    /// First of the v15 max/min pairs, in category order cpu, blkio,
    /// swapin, freepages, thrashing, compact, wpcopy, irq.
    pub const MAX_MIN: usize = 432;
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8)
        .map_or(0, |s| u64::from_ne_bytes(s.try_into().unwrap_or([0; 8])))
}

/// Decodes a `struct taskstats` payload; missing trailing fields read 0.
pub fn parse_taskstats(payload: &[u8]) -> Option<Taskstats> {
    let version = u16::from_ne_bytes(payload.get(0..2)?.try_into().ok()?);
    let bucket = |(c, t): (usize, usize), idx: usize| DelayBucket {
        count: u64_at(payload, c),
        total_ns: u64_at(payload, t),
        max_ns: u64_at(payload, off::MAX_MIN + idx * 16),
        min_ns: u64_at(payload, off::MAX_MIN + idx * 16 + 8),
    };
    Some(Taskstats {
        version,
        cpu: bucket(off::CPU, 0),
        blkio: bucket(off::BLKIO, 1),
        swapin: bucket(off::SWAPIN, 2),
        freepages: bucket(off::FREEPAGES, 3),
        thrashing: bucket(off::THRASHING, 4),
        compact: bucket(off::COMPACT, 5),
        wpcopy: bucket(off::WPCOPY, 6),
        irq: bucket(off::IRQ, 7),
        run_virtual_ns: u64_at(payload, off::RUN_VIRTUAL),
        hiwater_rss_kb: u64_at(payload, off::HIWATER_RSS),
        hiwater_vm_kb: u64_at(payload, off::HIWATER_VM),
    })
}

/// Why a taskstats query gave no data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryError {
    /// `EPERM`: the caller lacks `CAP_NET_ADMIN`.
    Permission,
    /// `ESRCH`: the task exited.
    NoTask,
    /// Any other errno, or a reply that could not be decoded (0).
    Other(i32),
}

impl QueryError {
    fn from_errno(e: i32) -> Self {
        match e {
            libc::EPERM | libc::EACCES => QueryError::Permission,
            libc::ESRCH => QueryError::NoTask,
            e => QueryError::Other(e),
        }
    }
}

const NLMSG_HDR: usize = 16;
const GENL_HDR: usize = 4;
const NLMSG_ERROR: u16 = 2;
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const TASKSTATS_CMD_GET: u8 = 1;
const TASKSTATS_CMD_ATTR_PID: u16 = 1;
const TASKSTATS_TYPE_STATS: u16 = 3;
const TASKSTATS_TYPE_AGGR_PID: u16 = 4;
const NLA_F_MASK: u16 = 0x3fff;

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Sends one netlink message to the kernel on socket `fd`.
pub(crate) fn send_to_kernel(fd: std::os::fd::RawFd, req: &[u8]) -> io::Result<()> {
    // SAFETY: req is a valid buffer; a zeroed sockaddr_nl addresses the kernel.
    let sent = unsafe {
        let mut addr: libc::sockaddr_nl = std::mem::zeroed();
        addr.nl_family = libc::AF_NETLINK as u16;
        libc::sendto(
            fd,
            req.as_ptr().cast(),
            req.len(),
            0,
            (&addr as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as u32,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Builds one generic-netlink request with a single attribute.
pub fn build_request(family: u16, cmd: u8, seq: u32, attr: u16, value: &[u8]) -> Vec<u8> {
    let attr_len = 4 + value.len();
    let total = NLMSG_HDR + GENL_HDR + align4(attr_len);
    let mut m = Vec::with_capacity(total);
    m.extend_from_slice(&(total as u32).to_ne_bytes());
    m.extend_from_slice(&family.to_ne_bytes());
    m.extend_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(&[cmd, 1, 0, 0]);
    m.extend_from_slice(&(attr_len as u16).to_ne_bytes());
    m.extend_from_slice(&attr.to_ne_bytes());
    m.extend_from_slice(value);
    m.resize(total, 0);
    m
}

/// Iterates the `(type, payload)` attributes in `b`, stopping at the first
/// malformed one.
pub fn attrs(b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        let hdr = b.get(pos..pos + 4)?;
        let len = usize::from(u16::from_ne_bytes([hdr[0], hdr[1]]));
        let ty = u16::from_ne_bytes([hdr[2], hdr[3]]) & NLA_F_MASK;
        if len < 4 {
            return None;
        }
        let payload = b.get(pos + 4..pos + len)?;
        pos += align4(len);
        Some((ty, payload))
    })
}

/// Splits one netlink reply into its generic-netlink attribute bytes, or the
/// errno of an `NLMSG_ERROR`.
pub fn reply_attrs(msg: &[u8]) -> Result<&[u8], QueryError> {
    let len = msg
        .get(0..4)
        .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or(QueryError::Other(0))?;
    let msg = msg.get(..len.min(msg.len())).ok_or(QueryError::Other(0))?;
    let ty = msg
        .get(4..6)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .ok_or(QueryError::Other(0))?;
    if ty == NLMSG_ERROR {
        let err = msg
            .get(NLMSG_HDR..NLMSG_HDR + 4)
            .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or(QueryError::Other(0))?;
        return Err(QueryError::from_errno(err.saturating_neg()));
    }
    msg.get(NLMSG_HDR + GENL_HDR..).ok_or(QueryError::Other(0))
}

/// Decodes a `TASKSTATS_CMD_GET` reply message.
pub fn parse_reply(msg: &[u8]) -> Result<Taskstats, QueryError> {
    let body = reply_attrs(msg)?;
    for (ty, payload) in attrs(body) {
        if ty == TASKSTATS_TYPE_AGGR_PID {
            for (inner, stats) in attrs(payload) {
                if inner == TASKSTATS_TYPE_STATS {
                    return parse_taskstats(stats).ok_or(QueryError::Other(0));
                }
            }
        }
    }
    Err(QueryError::Other(0))
}

/// A netlink socket bound to the TASKSTATS family.
#[derive(Debug)]
pub struct TaskstatsClient {
    fd: std::os::fd::OwnedFd,
    family: u16,
    seq: u32,
    buf: Vec<u8>,
}

impl TaskstatsClient {
    /// Opens a socket and resolves the family id. Fails when the kernel has
    /// no `CONFIG_TASKSTATS` or netlink is unavailable.
    pub fn open() -> io::Result<Self> {
        use std::os::fd::FromRawFd;
        // SAFETY: plain socket(2) call.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_GENERIC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: raw is a fresh descriptor we own.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
        let mut client = TaskstatsClient {
            fd,
            family: 0,
            seq: 0,
            buf: vec![0; 16384],
        };
        let reply = client.roundtrip(
            GENL_ID_CTRL,
            CTRL_CMD_GETFAMILY,
            CTRL_ATTR_FAMILY_NAME,
            b"TASKSTATS\0",
        )?;
        let body = reply_attrs(reply).map_err(|e| match e {
            QueryError::Other(0) => {
                io::Error::new(io::ErrorKind::InvalidData, "bad genetlink reply")
            }
            QueryError::Permission => io::Error::from_raw_os_error(libc::EPERM),
            QueryError::NoTask => io::Error::from_raw_os_error(libc::ESRCH),
            QueryError::Other(e) => io::Error::from_raw_os_error(e),
        })?;
        let family = attrs(body)
            .find(|(ty, p)| *ty == CTRL_ATTR_FAMILY_ID && p.len() >= 2)
            .map(|(_, p)| u16::from_ne_bytes([p[0], p[1]]))
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, "TASKSTATS family not registered")
            })?;
        client.family = family;
        Ok(client)
    }

    fn roundtrip(&mut self, family: u16, cmd: u8, attr: u16, value: &[u8]) -> io::Result<&[u8]> {
        self.seq = self.seq.wrapping_add(1);
        let req = build_request(family, cmd, self.seq, attr, value);
        use std::os::fd::AsRawFd;
        let fd = self.fd.as_raw_fd();
        send_to_kernel(fd, &req)?;
        loop {
            // SAFETY: buf is a valid writable buffer.
            let n = unsafe { libc::recv(fd, self.buf.as_mut_ptr().cast(), self.buf.len(), 0) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let n = n as usize;
            let seq = self
                .buf
                .get(8..12)
                .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
            if n >= NLMSG_HDR && seq == Some(self.seq) {
                return Ok(&self.buf[..n]);
            }
        }
    }

    /// Queries one task by tid.
    pub fn query(&mut self, tid: u32) -> Result<Taskstats, QueryError> {
        let family = self.family;
        match self.roundtrip(
            family,
            TASKSTATS_CMD_GET,
            TASKSTATS_CMD_ATTR_PID,
            &tid.to_ne_bytes(),
        ) {
            Ok(reply) => parse_reply(reply),
            Err(e) => Err(QueryError::from_errno(e.raw_os_error().unwrap_or(0))),
        }
    }
}

/// Reads `kernel.task_delayacct` (None when the sysctl does not exist).
pub fn delayacct_enabled() -> Option<bool> {
    let t = std::fs::read_to_string("/proc/sys/kernel/task_delayacct").ok()?;
    Some(t.trim() == "1")
}

pub mod exit;

#[cfg(test)]
mod tests;
