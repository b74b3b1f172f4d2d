//! The system call a worker slept in, as the kernel saw it at the
//! switch-out (x86_64): its number, its descriptor when it takes one, and
//! what kind of file that descriptor is (for a socket, its family and
//! type). A blocking call is then told as
//! `writev on a socket` rather than by a function name alone, and a name
//! the linker shares between types (`<&File as Write>::write_vectored`
//! is also `<&TcpStream as Write>::write_vectored`, one body) is read as
//! the type the descriptor has.

use serde::{Deserialize, Serialize};

/// What kind of file a descriptor is: the type bits of its inode's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FdKind {
    /// A TCP socket (IPv4 or IPv6, stream).
    TcpSocket,
    /// A UDP socket (IPv4 or IPv6, datagram).
    UdpSocket,
    /// A Unix stream socket.
    UnixStream,
    /// A Unix datagram or seqpacket socket.
    UnixDatagram,
    /// Another socket (netlink, raw, vsock).
    Socket,
    /// A pipe or FIFO (`S_IFIFO`).
    Pipe,
    /// A regular file (`S_IFREG`).
    File,
    /// A directory.
    Directory,
    /// A character device (a terminal, `/dev/null`).
    CharDevice,
    /// A block device.
    BlockDevice,
    /// An anonymous inode (eventfd, epoll, timerfd), or one not read.
    Anonymous,
}

impl FdKind {
    /// The kind of `i_mode >> 12` as the BPF program reads it, and for
    /// a socket its `family << 16 | type`.
    pub fn from_record(bits: u32, sock: u32) -> FdKind {
        const AF_UNIX: u32 = 1;
        const AF_INET: u32 = 2;
        const AF_INET6: u32 = 10;
        const SOCK_STREAM: u32 = 1;
        const SOCK_DGRAM: u32 = 2;
        match bits {
            0o14 => match (sock >> 16, sock & 0xffff) {
                (AF_INET | AF_INET6, SOCK_STREAM) => FdKind::TcpSocket,
                (AF_INET | AF_INET6, SOCK_DGRAM) => FdKind::UdpSocket,
                (AF_UNIX, SOCK_STREAM) => FdKind::UnixStream,
                (AF_UNIX, _) => FdKind::UnixDatagram,
                _ => FdKind::Socket,
            },
            0o1 => FdKind::Pipe,
            0o10 => FdKind::File,
            0o4 => FdKind::Directory,
            0o2 => FdKind::CharDevice,
            0o6 => FdKind::BlockDevice,
            _ => FdKind::Anonymous,
        }
    }

    /// How a report says it (`a socket`).
    pub fn phrase(self) -> &'static str {
        match self {
            FdKind::TcpSocket => "a TCP socket",
            FdKind::UdpSocket => "a UDP socket",
            FdKind::UnixStream => "a Unix stream socket",
            FdKind::UnixDatagram => "a Unix datagram socket",
            FdKind::Socket => "a socket",
            FdKind::Pipe => "a pipe",
            FdKind::File => "a file",
            FdKind::Directory => "a directory",
            FdKind::CharDevice => "a character device",
            FdKind::BlockDevice => "a block device",
            FdKind::Anonymous => "an anonymous descriptor",
        }
    }

    /// The standard library's types over such a descriptor, by the last
    /// segment of their path, the likeliest first.
    pub fn rust_types(self) -> &'static [&'static str] {
        match self {
            FdKind::TcpSocket => &["TcpStream", "TcpListener", "Socket"],
            FdKind::UdpSocket => &["UdpSocket", "Socket"],
            FdKind::UnixStream => &["UnixStream", "UnixListener", "Socket"],
            FdKind::UnixDatagram => &["UnixDatagram", "Socket"],
            FdKind::Socket => &["Socket"],
            FdKind::Pipe => &[
                "ChildStdin",
                "ChildStdout",
                "ChildStderr",
                "PipeReader",
                "PipeWriter",
                "AnonPipe",
            ],
            FdKind::File | FdKind::BlockDevice | FdKind::CharDevice => &["File"],
            FdKind::Directory | FdKind::Anonymous => &[],
        }
    }
}

/// The call a worker slept in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SleepCall {
    /// Its number (x86_64).
    pub nr: u32,
    /// Its descriptor, for a call that takes one first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd: Option<i32>,
    /// What that descriptor is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd_kind: Option<FdKind>,
}

impl SleepCall {
    /// The call of a blocked record's fields (`nr` -1: not in a system
    /// call, a page fault say; `fd` -1: none; see [`FdKind::from_record`]).
    pub fn from_record(nr: i32, fd: i32, type_bits: u32, sock: u32) -> Option<SleepCall> {
        let nr = u32::try_from(nr).ok()?;
        let fd = (fd >= 0).then_some(fd);
        Some(SleepCall {
            nr,
            fd,
            fd_kind: fd.map(|_| FdKind::from_record(type_bits, sock)),
        })
    }

    /// The call's name (`writev`), or `syscall N`.
    pub fn name(&self) -> String {
        syscall_name(self.nr).map_or_else(|| format!("syscall {}", self.nr), str::to_string)
    }

    /// How a report groups it: `writev on a socket`, `futex`.
    pub fn label(&self) -> String {
        match self.fd_kind {
            Some(k) => format!("{} on {}", self.name(), k.phrase()),
            None => self.name(),
        }
    }
}

/// The x86_64 system calls a thread commonly sleeps in, by number.
const NAMES: &[(u32, &str)] = &[
    (0, "read"),
    (1, "write"),
    (2, "open"),
    (7, "poll"),
    (16, "ioctl"),
    (17, "pread64"),
    (18, "pwrite64"),
    (19, "readv"),
    (20, "writev"),
    (23, "select"),
    (24, "sched_yield"),
    (26, "msync"),
    (34, "pause"),
    (35, "nanosleep"),
    (40, "sendfile"),
    (42, "connect"),
    (43, "accept"),
    (44, "sendto"),
    (45, "recvfrom"),
    (46, "sendmsg"),
    (47, "recvmsg"),
    (56, "clone"),
    (59, "execve"),
    (61, "wait4"),
    (72, "fcntl"),
    (73, "flock"),
    (74, "fsync"),
    (75, "fdatasync"),
    (77, "ftruncate"),
    (87, "unlink"),
    (128, "rt_sigtimedwait"),
    (130, "rt_sigsuspend"),
    (162, "sync"),
    (202, "futex"),
    (217, "getdents64"),
    (230, "clock_nanosleep"),
    (232, "epoll_wait"),
    (247, "waitid"),
    (257, "openat"),
    (262, "newfstatat"),
    (263, "unlinkat"),
    (270, "pselect6"),
    (271, "ppoll"),
    (275, "splice"),
    (277, "sync_file_range"),
    (281, "epoll_pwait"),
    (285, "fallocate"),
    (288, "accept4"),
    (295, "preadv"),
    (296, "pwritev"),
    (299, "recvmmsg"),
    (306, "syncfs"),
    (307, "sendmmsg"),
    (318, "getrandom"),
    (326, "copy_file_range"),
    (327, "preadv2"),
    (328, "pwritev2"),
    (332, "statx"),
    (426, "io_uring_enter"),
    (435, "clone3"),
    (441, "epoll_pwait2"),
];

/// The name of x86_64 system call `nr`, when it is one of [`NAMES`].
pub fn syscall_name(nr: u32) -> Option<&'static str> {
    NAMES
        .binary_search_by_key(&nr, |(n, _)| *n)
        .ok()
        .map(|i| NAMES[i].1)
}

/// The last path segment of the type a method name belongs to:
/// `TcpStream` for `<&std::net::tcp::TcpStream as std::io::Write>::write`,
/// `UdpSocket` for `<std::net::udp::UdpSocket>::send`, `File` for
/// `std::fs::File::sync_data`.
pub fn self_type(function: &str) -> Option<&str> {
    let ty = match function.strip_prefix('<') {
        Some(rest) => {
            let end = rest.find(" as ").or_else(|| rest.find(">::"))?;
            rest[..end]
                .trim_start_matches(['&', '*'])
                .trim_start_matches("mut ")
        }
        None => function.rsplit_once("::")?.0,
    };
    let ty = ty.split('<').next()?;
    ty.rsplit("::").next().filter(|t| !t.is_empty())
}

/// Of `names` (one body under several names), the one whose type fits a
/// descriptor of `kind`: `current` when it fits or none does.
pub fn fitting_alias<'a>(current: &'a str, names: &'a [impl AsRef<str>], kind: FdKind) -> &'a str {
    let types = kind.rust_types();
    let rank = |name: &str| {
        let ty = self_type(name)?;
        types.iter().position(|t| *t == ty)
    };
    if rank(current).is_some() || types.is_empty() {
        return current;
    }
    names
        .iter()
        .map(AsRef::as_ref)
        .filter_map(|n| Some((rank(n)?, n)))
        .min_by_key(|(r, _)| *r)
        .map_or(current, |(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sorted_for_the_search_and_known_calls_are_named() {
        assert!(NAMES.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(syscall_name(20), Some("writev"));
        assert_eq!(syscall_name(75), Some("fdatasync"));
        assert_eq!(syscall_name(999), None);
    }

    #[test]
    fn a_record_without_a_call_or_descriptor_says_so() {
        assert_eq!(SleepCall::from_record(-1, -1, 0, 0), None);
        let futex = SleepCall::from_record(202, -1, 0, 0).unwrap();
        assert_eq!(futex.label(), "futex");
        let write = SleepCall::from_record(20, 7, 0o14, 10 << 16 | 1).unwrap();
        assert_eq!(write.label(), "writev on a TCP socket");
        assert_eq!(write.fd, Some(7));
        let odd = SleepCall::from_record(600, 3, 0o10, 0).unwrap();
        assert_eq!(odd.label(), "syscall 600 on a file");
        let kinds = [
            (0o14, 2 << 16 | 2, FdKind::UdpSocket),
            (0o14, 1 << 16 | 1, FdKind::UnixStream),
            (0o14, 1 << 16 | 5, FdKind::UnixDatagram),
            (0o14, 16 << 16 | 3, FdKind::Socket),
            (0o1, 0, FdKind::Pipe),
            (0o2, 0, FdKind::CharDevice),
            (0, 0, FdKind::Anonymous),
        ];
        for (bits, sock, kind) in kinds {
            assert_eq!(FdKind::from_record(bits, sock), kind, "{bits:o} {sock:#x}");
        }
    }

    #[test]
    fn the_self_type_of_each_kind_of_name() {
        let cases = [
            (
                "<&std::net::tcp::TcpStream as std::io::Write>::write_vectored",
                "TcpStream",
            ),
            ("<std::net::udp::UdpSocket>::send", "UdpSocket"),
            ("std::fs::File::sync_data", "File"),
            ("<alloc::vec::Vec<u8> as std::io::Write>::write", "Vec"),
            ("<&mut std::fs::File as std::io::Read>::read", "File"),
        ];
        for (name, ty) in cases {
            assert_eq!(self_type(name), Some(ty), "{name}");
        }
        assert_eq!(self_type("writev"), None);
    }

    #[test]
    fn an_alias_is_read_as_the_type_of_its_descriptor() {
        let names = [
            "<&std::fs::File as std::io::Write>::write_vectored",
            "<&std::os::unix::net::stream::UnixStream as std::io::Write>::write_vectored",
            "<&std::net::tcp::TcpStream as std::io::Write>::write_vectored",
        ];
        let file = names[0];
        assert_eq!(fitting_alias(file, &names, FdKind::TcpSocket), names[2]);
        assert_eq!(fitting_alias(file, &names, FdKind::UnixStream), names[1]);
        assert_eq!(fitting_alias(file, &names, FdKind::File), file);
        // A name that fits already stays; nothing fits an eventfd.
        assert_eq!(fitting_alias(names[2], &names, FdKind::TcpSocket), names[2]);
        assert_eq!(fitting_alias(file, &names, FdKind::Anonymous), file);
        assert_eq!(fitting_alias(file, &names, FdKind::Pipe), file);
        // A TCP read the linker shares with a Unix datagram's receive.
        let read = [
            "<std::os::unix::net::datagram::UnixDatagram>::recv",
            "<std::net::tcp::TcpStream as std::io::Read>::read",
        ];
        assert_eq!(fitting_alias(read[0], &read, FdKind::TcpSocket), read[1]);
    }
}
