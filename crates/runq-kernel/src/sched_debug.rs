//! debugfs `sched/debug` (`/sys/kernel/debug/sched/debug`, kernels 5.13+):
//! the scheduler's state dump, of which runq takes each CPU's run-queue
//! depth (`.nr_running` of its `cpu#N` block). It needs no schedstats, but
//! it needs debugfs mounted and root; like perf with tracefs, runq mounts
//! debugfs when it may ([`open`]), and unmounts it again when it did
//! ([`DebugfsMount`]).

use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Where debugfs is mounted.
pub const DEBUGFS: &str = "/sys/kernel/debug";

/// The path of `sched/debug` under a debugfs mount.
pub fn sched_debug_path(debugfs: &Path) -> PathBuf {
    debugfs.join("sched/debug")
}

/// Each CPU's run-queue depth in a `sched/debug` dump: `(cpu, nr_running)`
/// in the dump's order. Only the `.nr_running` line directly in a `cpu#N`
/// block counts (not `.rt_nr_running`, `.dl_nr_running`, nor a cfs_rq's
/// `.nr_running` of older kernels, which come under their own headers).
pub fn parse_nr_running(text: &str) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut cpu: Option<u32> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("cpu#") {
            let num = rest.split(|c: char| !c.is_ascii_digit()).next();
            cpu = num.and_then(|n| n.parse().ok());
            continue;
        }
        if line.trim().is_empty() || !line.starts_with(' ') {
            cpu = None; // a blank line or another header ends the block
            continue;
        }
        let Some(c) = cpu else { continue };
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        if key.trim() == ".nr_running" {
            if let Ok(n) = value.trim().parse() {
                out.push((c, n));
            }
            cpu = None;
        }
    }
    out
}

/// The `sched/debug` reader.
#[derive(Debug)]
pub struct SchedDebug {
    path: PathBuf,
    mount: Option<DebugfsMount>,
    buf: String,
}

/// debugfs as runq mounted it: dropping this unmounts it again.
#[derive(Debug)]
pub struct DebugfsMount(());

impl Drop for DebugfsMount {
    fn drop(&mut self) {
        let _ = umount(Path::new(DEBUGFS));
    }
}

impl SchedDebug {
    /// Reads the dump (into a buffer kept between reads) and returns each
    /// CPU's run-queue depth.
    pub fn read_nr_running(&mut self) -> io::Result<Vec<(u32, u32)>> {
        self.buf.clear();
        std::fs::File::open(&self.path)?.read_to_string(&mut self.buf)?;
        Ok(parse_nr_running(&self.buf))
    }

    /// The mount runq made for this reader, if it made one, for the
    /// caller to drop (unmount) when it chooses; otherwise dropping the
    /// reader unmounts it.
    pub fn take_mount(&mut self) -> Option<DebugfsMount> {
        self.mount.take()
    }
}

/// Opens `sched/debug`, mounting debugfs at [`DEBUGFS`] first when it is
/// not mounted and this process may mount it. The error is the reason it
/// is unavailable, as a sentence.
pub fn open() -> Result<SchedDebug, String> {
    let path = sched_debug_path(Path::new(DEBUGFS));
    let found = |mount| SchedDebug {
        path: path.clone(),
        mount,
        buf: String::new(),
    };
    match std::fs::File::open(&path) {
        Ok(_) => return Ok(found(None)),
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
    mount_debugfs()?;
    let sd = found(Some(DebugfsMount(()))); // from here, dropping it unmounts
    match std::fs::File::open(&path) {
        Ok(_) => Ok(sd),
        Err(e) => Err(format!("mounted debugfs, but {}: {e}", path.display())),
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

fn mount_debugfs() -> Result<(), String> {
    let (src, dst, fstype) = (cstr("none"), cstr(DEBUGFS), cstr("debugfs"));
    // SAFETY: valid NUL-terminated strings; no data argument.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            dst.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    Err(match err.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            format!("debugfs is not mounted and mounting it at {DEBUGFS} needs root")
        }
        _ => format!("debugfs is not mounted and mounting it at {DEBUGFS} failed: {err}"),
    })
}

fn umount(target: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let dst = std::ffi::CString::new(target.as_os_str().as_bytes())?;
    // SAFETY: a valid NUL-terminated path. MNT_DETACH: a reader still
    // holding a file open does not keep the mount.
    let rc = unsafe { libc::umount2(dst.as_ptr(), libc::MNT_DETACH) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
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

    #[test]
    fn takes_only_each_cpu_blocks_nr_running() {
        assert_eq!(parse_nr_running(FIXTURE), vec![(0, 3), (1, 0), (3, 12)]);
    }

    #[test]
    fn empty_and_foreign_text() {
        assert!(parse_nr_running("").is_empty());
        assert!(parse_nr_running("  .nr_running : 4\n").is_empty());
        assert!(parse_nr_running("cpu#x\n  .nr_running : 4\n").is_empty());
    }

    #[test]
    fn the_path_is_under_debugfs() {
        assert_eq!(
            sched_debug_path(Path::new(DEBUGFS)),
            Path::new("/sys/kernel/debug/sched/debug")
        );
    }
}
