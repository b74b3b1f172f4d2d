//! jemalloc per-thread allocation counters of other processes.
//!
//! For an executable statically linked with jemalloc (as with
//! `tikv-jemallocator`), the thread-specific data `tsd_s` lives in static
//! TLS: the `*tsd_tls` symbol gives its offset in the TLS segment, the
//! executable's DWARF gives the offsets of `thread_allocated` and
//! `thread_deallocated` in `tsd_s`, ptrace gives each thread's thread
//! pointer (`fs_base`), and `process_vm_readv` reads the two counters.
//! Processes without jemalloc keep zero. One linked with jemalloc but
//! stripped of the symbol or the debug info is marked unavailable
//! (stripped), as is a process that maps a shared `libjemalloc.so`
//! unavailable (its TSD is in the library's dynamic TLS, not read here),
//! and so is every process on a host other than x86_64: neither reads as
//! "no jemalloc".

pub mod dwarf;
pub mod elf;

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::avail::{Reason, Source};
use crate::metric_types::Bytes;
use crate::model::ThreadState;

/// Where the counters sit relative to a thread's thread pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JemallocLayout {
    /// Address of `thread_allocated` minus the thread pointer.
    pub allocated: i64,
    /// Address of `thread_deallocated` minus the thread pointer.
    pub deallocated: i64,
}

/// What an executable holds of jemalloc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaticJemalloc {
    /// Linked in, with the symbol and debug info that locate the counters.
    Readable(JemallocLayout),
    /// Linked in (its messages are in `.rodata`), but stripped of the
    /// `tsd_tls` symbol or of the debug info: the counters exist and
    /// cannot be located.
    Stripped,
    /// Not linked in.
    Absent,
}

/// The mark every jemalloc build carries in its messages.
const JEMALLOC_MARK: &[u8] = b"<jemalloc>";

/// Inspects an executable: whether it is statically linked with jemalloc,
/// and where the counters sit when that can be found.
pub fn inspect(exe: &Path) -> StaticJemalloc {
    let Some(elf) = std::fs::File::open(exe).ok().and_then(elf::Elf::open) else {
        return StaticJemalloc::Absent;
    };
    if let Some(layout) = layout_in(&elf) {
        return StaticJemalloc::Readable(layout);
    }
    let marked = elf.section(".rodata").is_some_and(|data| {
        data.windows(JEMALLOC_MARK.len())
            .any(|w| w == JEMALLOC_MARK)
    });
    if marked {
        StaticJemalloc::Stripped
    } else {
        StaticJemalloc::Absent
    }
}

/// Where the counters sit, from the `tsd_tls` symbol and the DWARF.
fn layout_in(elf: &elf::Elf) -> Option<JemallocLayout> {
    let tls = elf.tls()?;
    let sym = elf.tls_symbol("tsd_tls")?;
    let (a, d) = dwarf::tsd_offsets(elf)?;
    let base = elf::tp_offset(tls, sym);
    Some(JemallocLayout {
        allocated: base + a as i64,
        deallocated: base + d as i64,
    })
}

/// The thread pointer (`fs_base`) of `tid`, read by briefly seizing it.
#[cfg(target_arch = "x86_64")]
pub fn thread_pointer(tid: i32) -> Option<u64> {
    if !seize(tid) {
        return None;
    }
    // SAFETY: ptrace/waitpid on a tid we seized; every path detaches.
    unsafe {
        let mut regs: libc::user_regs_struct = std::mem::zeroed();
        let mut ok = libc::ptrace(libc::PTRACE_INTERRUPT, tid, 0, 0) == 0 && wait_stopped(tid);
        ok = ok && libc::ptrace(libc::PTRACE_GETREGS, tid, 0, &mut regs as *mut _) == 0;
        libc::ptrace(libc::PTRACE_DETACH, tid, 0, 0);
        ok.then_some(regs.fs_base)
    }
}

/// How long a seize waits for another tracer to let go of a thread.
#[cfg(target_arch = "x86_64")]
const SEIZE_PATIENCE: std::time::Duration = std::time::Duration::from_millis(200);

/// Seizes `tid` with ptrace. A thread already traced (another capture
/// reading the same process at the same moment, or a debugger) refuses
/// with EPERM: while `/proc` names a tracer, the seize is retried for up to
/// [`SEIZE_PATIENCE`], since a concurrent capture holds each thread for
/// microseconds. A tracer's detach clears `TracerPid` a moment before the
/// thread can be seized again, so an EPERM without a tracer is retried
/// [`UNTRACED_RETRIES`] times before it counts as a real refusal.
#[cfg(target_arch = "x86_64")]
fn seize(tid: i32) -> bool {
    let deadline = std::time::Instant::now() + SEIZE_PATIENCE;
    let mut untraced = 0;
    loop {
        // SAFETY: PTRACE_SEIZE on a tid; the caller detaches.
        if unsafe { libc::ptrace(libc::PTRACE_SEIZE, tid, 0, 0) } == 0 {
            return true;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EPERM) {
            return false;
        }
        if tracer_of(tid).is_none_or(|t| t == 0) {
            untraced += 1;
        }
        if untraced > UNTRACED_RETRIES || std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

/// EPERMs without a tracer a seize sits through (200 µs apart): a detach
/// in progress.
#[cfg(target_arch = "x86_64")]
const UNTRACED_RETRIES: u32 = 10;

/// The `TracerPid` of a thread, from `/proc/<tid>/status`.
#[cfg(target_arch = "x86_64")]
fn tracer_of(tid: i32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    tracer_in_status(&status)
}

/// The `TracerPid:` field of a `/proc/<pid>/status` text.
#[cfg(target_arch = "x86_64")]
fn tracer_in_status(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Waits (at most 100 ms, so a thread stuck in uninterruptible sleep cannot
/// hang the capture) for a seized thread to report its stop.
#[cfg(target_arch = "x86_64")]
fn wait_stopped(tid: i32) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(100);
    loop {
        let mut status = 0;
        // SAFETY: plain waitpid on a thread we seized.
        let r = unsafe { libc::waitpid(tid, &mut status, libc::__WALL | libc::WNOHANG) };
        if r == tid {
            return libc::WIFSTOPPED(status);
        }
        if r < 0 || std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}

/// The thread pointer is not read on other architectures.
#[cfg(not(target_arch = "x86_64"))]
pub fn thread_pointer(_tid: i32) -> Option<u64> {
    None
}

/// Reads a u64 at `addr` in process `pid`.
pub fn read_u64(pid: i32, addr: u64) -> Option<u64> {
    let mut v = [0u8; 8];
    let local = libc::iovec {
        iov_base: v.as_mut_ptr().cast(),
        iov_len: 8,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: 8,
    };
    // SAFETY: both iovecs describe 8 valid bytes (remote is checked by the kernel).
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    (n == 8).then(|| u64::from_ne_bytes(v))
}

/// Reads `tid`'s two counters.
pub fn read_thread(tgid: i32, tid: i32, layout: JemallocLayout) -> Option<(u64, u64)> {
    let tp = thread_pointer(tid)?;
    let at = |off: i64| tp.checked_add_signed(off);
    Some((
        read_u64(tgid, at(layout.allocated)?)?,
        read_u64(tgid, at(layout.deallocated)?)?,
    ))
}

/// Why no thread's jemalloc counters can be read on this host: not asked
/// for (`--no-jemalloc`), or an architecture the reader does not support.
pub fn host_reason(wanted: bool, arch: &str) -> Option<Reason> {
    if !wanted {
        Some(Reason::NotQueried)
    } else if arch != "x86_64" {
        Some(Reason::UnsupportedArch)
    } else {
        None
    }
}

/// True when a `/proc/<pid>/maps` text maps a shared libjemalloc.
pub fn maps_shared_jemalloc(maps: &[u8]) -> bool {
    maps.split(|&b| b == b'\n').any(|line| {
        let path = line.rsplit(|&b| b == b'/').next().unwrap_or(b"");
        path.starts_with(b"libjemalloc") && line.contains(&b'/')
    })
}

fn shared_jemalloc(proc_root: &Path, tgid: u32) -> bool {
    std::fs::read(proc_root.join(tgid.to_string()).join("maps"))
        .is_ok_and(|m| maps_shared_jemalloc(&m))
}

/// What each process of a listing allocates with, by tgid (from its
/// executable and maps, per process: [`detect`] runs beside the per-thread
/// reads of a capture).
#[derive(Debug, Default)]
pub struct Allocators(HashMap<u32, Allocator>);

/// Inspects every process of `listed` (`(tgid, tid)` sorted by tgid)
/// except the capturing one: each executable once, and the maps of a
/// process whose executable holds no jemalloc.
pub fn detect(proc_root: &Path, listed: &[(u32, u32)]) -> Allocators {
    let me = std::process::id();
    let mut by_exe: HashMap<(u64, u64), StaticJemalloc> = HashMap::new();
    let mut out = HashMap::new();
    for process in listed.chunk_by(|a, b| a.0 == b.0) {
        let tgid = process[0].0;
        if tgid != me {
            out.insert(tgid, allocator(proc_root, tgid, &mut by_exe));
        }
    }
    Allocators(out)
}

/// Fills `allocated_bytes` / `deallocated_bytes` for every thread of every
/// jemalloc-linked process in `allocators`; returns how many processes
/// were read. Threads of a process that maps a shared libjemalloc, or
/// whose counters could not be read, are marked unavailable rather than
/// left at a zero that reads as "no jemalloc".
pub fn fill(threads: &mut [ThreadState], allocators: &Allocators) -> u64 {
    let mut read = 0;
    for t in threads.iter_mut() {
        let Some(&kind) = allocators.0.get(&t.tgid) else {
            continue;
        };
        let layout = match kind {
            Allocator::Static(layout) => layout,
            Allocator::Shared => {
                t.mark(Source::Jemalloc, Reason::DynamicLib);
                continue;
            }
            Allocator::Stripped => {
                t.mark(Source::Jemalloc, Reason::Stripped);
                continue;
            }
            Allocator::Denied => {
                t.mark(Source::Jemalloc, Reason::Eperm);
                continue;
            }
            Allocator::Other => continue,
        };
        if t.tid == t.tgid {
            read += 1;
        }
        match read_thread(t.tgid as i32, t.tid as i32, layout) {
            Some((a, d)) => {
                t.allocated_bytes = Bytes(a);
                t.deallocated_bytes = Bytes(d);
            }
            None => t.mark(Source::Jemalloc, Reason::Error),
        }
    }
    read
}

/// `PF_KTHREAD` in the flags of `/proc/<pid>/stat`.
const PF_KTHREAD: u64 = 0x0020_0000;

/// True when `stat` text (`pid (comm) S ppid ... flags ...`) is a kernel
/// thread's.
pub fn stat_is_kernel_thread(stat: &str) -> bool {
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    // After the comm: state, ppid, pgrp, session, tty_nr, tpgid, flags.
    rest.split_ascii_whitespace()
        .nth(6)
        .and_then(|f| f.parse::<u64>().ok())
        .is_some_and(|f| f & PF_KTHREAD != 0)
}

fn kernel_thread(proc_root: &Path, tgid: u32) -> bool {
    std::fs::read_to_string(proc_root.join(tgid.to_string()).join("stat"))
        .is_ok_and(|s| stat_is_kernel_thread(&s))
}

/// What a process allocates with, as far as the counters go.
#[derive(Debug, Clone, Copy)]
enum Allocator {
    /// jemalloc linked into the executable: readable.
    Static(JemallocLayout),
    /// A shared libjemalloc is mapped: not readable.
    Shared,
    /// jemalloc linked in, the executable stripped: not readable.
    Stripped,
    /// The executable could not be inspected (another user's process).
    Denied,
    /// Another allocator, or a kernel thread (no executable): real zero.
    Other,
}

fn allocator(
    proc_root: &Path,
    tgid: u32,
    by_exe: &mut HashMap<(u64, u64), StaticJemalloc>,
) -> Allocator {
    let exe = proc_root.join(tgid.to_string()).join("exe");
    // Kernel threads have no executable (and no maps worth reading).
    let meta = match std::fs::metadata(&exe) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return match kernel_thread(proc_root, tgid) {
                true => Allocator::Other,
                false => Allocator::Denied,
            };
        }
        Err(_) => return Allocator::Other,
    };
    let found = *by_exe
        .entry((meta.dev(), meta.ino()))
        .or_insert_with(|| inspect(&exe));
    match found {
        StaticJemalloc::Readable(l) => Allocator::Static(l),
        StaticJemalloc::Stripped => Allocator::Stripped,
        StaticJemalloc::Absent if shared_jemalloc(proc_root, tgid) => Allocator::Shared,
        StaticJemalloc::Absent => Allocator::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_jemalloc_binaries_have_no_jemalloc() {
        assert_eq!(inspect(Path::new("/bin/sh")), StaticJemalloc::Absent);
        assert_eq!(inspect(Path::new("/nonexistent")), StaticJemalloc::Absent);
        let d = tempfile::tempdir().unwrap();
        let junk = d.path().join("junk");
        std::fs::write(&junk, b"\x7fELF garbage").unwrap();
        assert_eq!(inspect(&junk), StaticJemalloc::Absent);
    }

    #[test]
    fn host_reasons_and_shared_libraries() {
        assert_eq!(host_reason(true, "x86_64"), None);
        assert_eq!(host_reason(true, "aarch64"), Some(Reason::UnsupportedArch));
        assert_eq!(host_reason(false, "x86_64"), Some(Reason::NotQueried));
        let maps = b"55d0-55d1 r--p 0 08:01 1 /usr/bin/app\n\
7f00-7f01 r-xp 0 08:01 2 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2\n";
        assert!(maps_shared_jemalloc(maps));
        assert!(!maps_shared_jemalloc(b"7f00-7f01 rw-p 0 00:00 0 [heap]\n"));
        assert!(!maps_shared_jemalloc(
            b"7f00-7f01 r-xp 0 08:01 2 /usr/lib/libc.so.6\n"
        ));
        assert!(!maps_shared_jemalloc(b""));
    }

    #[test]
    fn kernel_threads_by_stat_flags() {
        let kthread = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 2 0 0 20 0 1 0 1 0 0";
        assert!(stat_is_kernel_thread(kthread));
        let user = "77 (my (odd) app) S 1 77 77 0 -1 4194560 0 0 0 0 0 2 0 0 20 0 1 0 1 0 0";
        assert!(!stat_is_kernel_thread(user));
        assert!(!stat_is_kernel_thread("garbage"));
        let me = std::fs::read_to_string("/proc/self/stat").unwrap();
        assert!(!stat_is_kernel_thread(&me));
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn tracer_pid_from_status() {
        let status = "Name:\tapp\nState:\tS (sleeping)\nTracerPid:\t4242\nUid:\t0\n";
        assert_eq!(tracer_in_status(status), Some(4242));
        assert_eq!(tracer_in_status("TracerPid:\t0\n"), Some(0));
        assert_eq!(tracer_in_status("Name:\tapp\n"), None);
        assert_eq!(tracer_of(std::process::id() as i32), Some(0));
    }

    #[test]
    fn tp_offset_variant_ii() {
        let tls = elf::TlsSegment {
            memsz: 0xac0,
            align: 8,
        };
        assert_eq!(elf::tp_offset(tls, 0), -0xac0);
        let tls = elf::TlsSegment {
            memsz: 0x11,
            align: 16,
        };
        assert_eq!(elf::tp_offset(tls, 4), 4 - 0x20);
    }
}
