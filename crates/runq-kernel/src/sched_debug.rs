//! debugfs `sched/debug` (`/sys/kernel/debug/sched/debug`, kernels 5.13+):
//! the scheduler's state dump, of which runq takes each CPU's run-queue
//! depth, the task on it and its run-queue clock (`.nr_running`,
//! `.curr->pid` and `.clock` of its `cpu#N` block). It needs no schedstats, but
//! it needs debugfs mounted and root; runq mounts debugfs when it may,
//! where only its reading thread sees it ([`open`]).

use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Where debugfs is mounted.
pub const DEBUGFS: &str = "/sys/kernel/debug";

/// The path of `sched/debug` under a debugfs mount.
pub fn sched_debug_path(debugfs: &Path) -> PathBuf {
    debugfs.join("sched/debug")
}

/// One CPU's run queue in a `sched/debug` dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuRq {
    /// The CPU.
    pub cpu: u32,
    /// `.nr_running`: tasks on its run queue, the running one included.
    pub nr_running: u32,
    /// `.curr->pid`: the task on the CPU (0 is its idle task).
    pub curr_pid: Option<i64>,
    /// `.clock`: the run queue's clock, ns (`ms.nnnnnn` in the dump).
    pub clock_ns: Option<u64>,
}

/// Each CPU's run queue in a `sched/debug` dump, in the dump's order
/// (CPUs without `.nr_running` left out). Only the lines directly in a
/// `cpu#N` block count, up to its blank line (not `.rt_nr_running`,
/// `.dl_nr_running`, nor a cfs_rq's `.nr_running` or `.clock`, which come
/// under their own headers).
pub fn parse_rqs(text: &str) -> Vec<CpuRq> {
    let mut out: Vec<CpuRq> = Vec::new();
    let mut block: Option<CpuRq> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("cpu#") {
            out.extend(block.take().filter(|b| b.nr_running != u32::MAX));
            let num = rest.split(|c: char| !c.is_ascii_digit()).next();
            block = num.and_then(|n| n.parse().ok()).map(|cpu| CpuRq {
                cpu,
                nr_running: u32::MAX,
                curr_pid: None,
                clock_ns: None,
            });
            continue;
        }
        if line.trim().is_empty() || !line.starts_with(' ') {
            // A blank line or another header ends the block.
            out.extend(block.take().filter(|b| b.nr_running != u32::MAX));
            continue;
        }
        let (Some(b), Some((key, value))) = (block.as_mut(), line.split_once(':')) else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            ".nr_running" => b.nr_running = value.parse().unwrap_or(u32::MAX),
            ".curr->pid" => b.curr_pid = value.parse().ok(),
            ".clock" => b.clock_ns = parse_ms_ns(value),
            _ => {}
        }
    }
    out.extend(block.filter(|b| b.nr_running != u32::MAX));
    out
}

/// A `sched/debug` time, `MS.NNNNNN` (milliseconds, then nanoseconds),
/// in ns.
fn parse_ms_ns(value: &str) -> Option<u64> {
    let (ms, ns) = value.split_once('.')?;
    let ms: u64 = ms.parse().ok()?;
    let ns: u64 = ns.parse().ok().filter(|_| ns.len() == 6)?;
    ms.checked_mul(1_000_000)?.checked_add(ns)
}

/// The `sched/debug` reader.
#[derive(Debug)]
pub struct SchedDebug {
    path: PathBuf,
    buf: String,
}

impl SchedDebug {
    /// Reads the dump (into a buffer kept between reads) and returns each
    /// CPU's run queue.
    pub fn read_rqs(&mut self) -> io::Result<Vec<CpuRq>> {
        self.buf.clear();
        std::fs::File::open(&self.path)?.read_to_string(&mut self.buf)?;
        Ok(parse_rqs(&self.buf))
    }
}

/// Opens `sched/debug`. When debugfs is not mounted and this process may
/// mount it, the calling thread moves to a mount namespace of its own and
/// mounts debugfs there: the host never sees the mount (a concurrent
/// reader of /sys/kernel/debug finds it as it was), and it goes with the
/// thread, even one killed. Call it on the thread that reads. The error is
/// the reason `sched/debug` is unavailable, as a sentence.
pub fn open() -> Result<SchedDebug, String> {
    let path = sched_debug_path(Path::new(DEBUGFS));
    match std::fs::File::open(&path) {
        Ok(_) => return Ok(SchedDebug::at(path)),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            return Err(format!(
                "{}: permission denied (needs root)",
                path.display()
            ))
        }
        Err(_) if debugfs_mounted() => {
            return Err(format!(
                "no {} (kernel before 5.13 or without CONFIG_SCHED_DEBUG)",
                path.display()
            ))
        }
        Err(_) => {}
    }
    mount_private_debugfs()?;
    match std::fs::File::open(&path) {
        Ok(_) => Ok(SchedDebug::at(path)),
        Err(e) => Err(format!("mounted debugfs, but {}: {e}", path.display())),
    }
}

impl SchedDebug {
    fn at(path: PathBuf) -> SchedDebug {
        SchedDebug {
            path,
            buf: String::new(),
        }
    }
}

/// Whether a debugfs is mounted at [`DEBUGFS`] (per `/proc/self/mounts`).
fn debugfs_mounted() -> bool {
    std::fs::read_to_string("/proc/self/mounts").is_ok_and(|m| {
        m.lines().any(|l| {
            let mut f = l.split_whitespace().skip(1);
            (f.next(), f.next()) == (Some(DEBUGFS), Some("debugfs"))
        })
    })
}

fn cstr(s: &str) -> std::ffi::CString {
    std::ffi::CString::new(s).expect("no NUL in a constant path")
}

/// `mount(2)`; the error is `errno`.
fn mount(src: &str, dst: &str, fstype: Option<&str>, flags: libc::c_ulong) -> io::Result<()> {
    let (src, dst, fstype) = (cstr(src), cstr(dst), fstype.map(cstr));
    let fs = fstype.as_ref().map_or(std::ptr::null(), |f| f.as_ptr());
    // SAFETY: valid NUL-terminated strings (or null for the type); no data.
    let rc = unsafe { libc::mount(src.as_ptr(), dst.as_ptr(), fs, flags, std::ptr::null()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Moves this thread to a mount namespace of its own whose mounts do not
/// propagate back, and mounts debugfs at [`DEBUGFS`] in it.
fn mount_private_debugfs() -> Result<(), String> {
    let needs_root = |e: &io::Error| {
        matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES))
            .then(|| format!("debugfs is not mounted and mounting it at {DEBUGFS} needs root"))
    };
    let failed = |step: &str, e: io::Error| {
        needs_root(&e).unwrap_or_else(|| format!("debugfs is not mounted and {step} failed: {e}"))
    };
    // SAFETY: unshare with a valid flag; it affects only this thread.
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
        return Err(failed(
            "a private mount namespace",
            io::Error::last_os_error(),
        ));
    }
    mount("none", "/", None, libc::MS_REC | libc::MS_PRIVATE)
        .map_err(|e| failed("making mounts private", e))?;
    mount("none", DEBUGFS, Some("debugfs"), 0).map_err(|e| failed("mounting it", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = "\
Sched Debug Version: v0.11, 6.18.44 #1
ktime                                   : 15851462.608800

sysctl_sched
  .sysctl_sched_base_slice                 : 1.400000

cpu#0, 2445.430 MHz
  .nr_running                    : 3
  .nr_switches                   : 26038155
  .nr_uninterruptible            : 3961

cfs_rq[0]:/autogroup-42
  .nr_running                    : 9
  .nr_queued                     : 1
  .h_nr_queued                   : 7

rt_rq[0]:/
  .rt_nr_running                 : 5

dl_rq[0]:
  .dl_nr_running                 : 6

runnable tasks:
 S            task   PID       vruntime
>R              cp 19416       265.642015

cpu#1, 2445.430 MHz
  .nr_switches                   : 1
  .nr_running                    : 0

rt_rq[1]:/
  .rt_nr_running                 : 2

cpu#3, 2445.430 MHz
  .nr_running                    : 12
";

    fn depths(text: &str) -> Vec<(u32, u32)> {
        parse_rqs(text)
            .iter()
            .map(|r| (r.cpu, r.nr_running))
            .collect()
    }

    #[test]
    fn takes_only_each_cpu_blocks_nr_running() {
        assert_eq!(depths(FIXTURE), vec![(0, 3), (1, 0), (3, 12)]);
    }

    #[test]
    fn empty_and_foreign_text() {
        assert!(parse_rqs("").is_empty());
        assert!(parse_rqs("  .nr_running : 4\n").is_empty());
        assert!(parse_rqs("cpu#x\n  .nr_running : 4\n").is_empty());
        assert!(parse_rqs("cpu#2\n  .clock : 5.000001\n").is_empty());
    }

    /// A real 6.12 guest's dump: each CPU's clock, task and depth, none
    /// taken from the cfs_rq blocks that follow.
    #[test]
    fn a_6_12_guest_gives_clock_and_curr_per_cpu() {
        let text = include_str!("../tests/fixtures/sched_debug/6.12-simple-busy-1");
        let rqs = parse_rqs(text);
        assert_eq!(rqs.len(), 4);
        assert_eq!(
            rqs[0],
            CpuRq {
                cpu: 0,
                nr_running: 2,
                curr_pid: Some(103),
                clock_ns: Some(21_386_210_341),
            }
        );
        assert_eq!(depths(text), vec![(0, 2), (1, 1), (2, 1), (3, 2)]);
        let later = parse_rqs(include_str!(
            "../tests/fixtures/sched_debug/6.12-simple-busy-2"
        ));
        for (a, b) in rqs.iter().zip(&later) {
            assert!(b.clock_ns > a.clock_ns, "cpu {}: {a:?} then {b:?}", a.cpu);
        }
    }

    #[test]
    fn clock_values_are_ms_then_six_digits_of_ns() {
        assert_eq!(parse_ms_ns("21386.210341"), Some(21_386_210_341));
        assert_eq!(parse_ms_ns("0.000001"), Some(1));
        assert_eq!(parse_ms_ns("12.5"), None);
        assert_eq!(parse_ms_ns("x.000001"), None);
        assert_eq!(parse_ms_ns("12"), None);
    }

    #[test]
    fn the_path_is_under_debugfs() {
        assert_eq!(
            sched_debug_path(Path::new(DEBUGFS)),
            Path::new("/sys/kernel/debug/sched/debug")
        );
    }
}
