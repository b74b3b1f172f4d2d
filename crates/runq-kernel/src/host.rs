//! The host context a snapshot is taken on: kernel, CPU model, memory,
//! `sched_*` tunables, NUMA layout and the kernel command line.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Aggregate host state that does not change between scenarios.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostContext {
    /// Host name.
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel_release: String,
    /// Kernel build string (`uname -v`).
    pub kernel_version: String,
    /// Machine architecture (`uname -m`).
    pub arch: String,
    /// First `model name` of /proc/cpuinfo.
    pub cpu_model: String,
    /// Online CPUs.
    pub online_cpus: u32,
    /// `MemTotal` in KiB.
    pub mem_total_kb: u64,
    /// USER_HZ (`sysconf(_SC_CLK_TCK)`).
    pub user_hz: u64,
    /// Every `/proc/sys/kernel/sched_*` value by file name.
    pub sched_tunables: BTreeMap<String, String>,
    /// The scheduler tunables in debugfs (`/sys/kernel/debug/sched/`,
    /// kernels 5.13+) by path below that directory (`base_slice_ns`,
    /// `numa_balancing/scan_delay_ms`).
    pub sched_debugfs: BTreeMap<String, String>,
    /// Why `sched_debugfs` is empty, when it is (debugfs not mounted, no
    /// `sched` directory, permission denied).
    pub sched_debugfs_unavailable: Option<String>,
    /// NUMA nodes: node id -> CPU list text.
    pub numa_nodes: BTreeMap<u32, String>,
    /// /proc/cmdline.
    pub cmdline: String,
}

fn read_trim(p: &Path) -> String {
    std::fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// First value of `key` in cpuinfo text.
pub fn parse_cpu_model(cpuinfo: &str) -> String {
    cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// `MemTotal` in KiB from meminfo text.
pub fn parse_mem_total_kb(meminfo: &str) -> u64 {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn uname() -> (String, String, String, String) {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: u is a valid out-pointer.
    if unsafe { libc::uname(&mut u) } != 0 {
        return Default::default();
    }
    let s = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (s(&u.nodename), s(&u.release), s(&u.version), s(&u.machine))
}

/// A debugfs value worth keeping: one short line (skips state dumps such
/// as `sched/debug`).
fn tunable_value(text: &str) -> Option<String> {
    let v = text.trim();
    (v.len() <= 256 && !v.contains('\n')).then(|| v.to_string())
}

/// Reads the one-line files of `dir` (and of its `numa_balancing/`) into
/// `out`, keyed `prefix` + file name.
fn read_tunables(
    dir: &Path,
    prefix: &str,
    out: &mut BTreeMap<String, String>,
) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() && prefix.is_empty() && name == "numa_balancing" {
            read_tunables(&e.path(), "numa_balancing/", out)?;
        } else if ft.is_file() {
            match std::fs::read_to_string(e.path()) {
                Ok(text) => {
                    if let Some(v) = tunable_value(&text) {
                        out.insert(format!("{prefix}{name}"), v);
                    }
                }
                Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => return Err(err),
                Err(_) => {}
            }
        }
    }
    Ok(())
}

/// The scheduler tunables of `<sys_root>/kernel/debug/sched` (kernels
/// 5.13+ moved the `sched_*` debug sysctls there). Never mounts debugfs:
/// an unmounted debugfs or an older kernel is a reason, not an error.
pub fn read_sched_debugfs(sys_root: &Path) -> Result<BTreeMap<String, String>, String> {
    let debug = sys_root.join("kernel/debug");
    let dir = debug.join("sched");
    let mut out = BTreeMap::new();
    match read_tunables(&dir, "", &mut out) {
        Ok(()) if out.is_empty() => Err(format!("{} holds no tunables", dir.display())),
        Ok(()) => Ok(out),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            // SAFETY: geteuid has no preconditions.
            let root = unsafe { libc::geteuid() } == 0;
            Err(if root {
                format!(
                    "{}: the kernel refuses it even to root (kernel lockdown or debugfs access restricted)",
                    dir.display()
                )
            } else {
                format!("{}: permission denied (run as root)", dir.display())
            })
        }
        Err(_) => {
            let mounted = std::fs::read_dir(&debug).is_ok_and(|mut d| d.next().is_some());
            Err(if mounted {
                format!("no {} (kernel before 5.13?)", dir.display())
            } else {
                format!("debugfs not mounted at {}", debug.display())
            })
        }
    }
}

/// Reads the host context from `proc_root` and `sys_root` (`/proc`, `/sys`).
pub fn read_host_context(proc_root: &Path, sys_root: &Path) -> HostContext {
    let (hostname, kernel_release, kernel_version, arch) = uname();
    let mut sched_tunables = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(proc_root.join("sys/kernel")) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("sched_") && e.path().is_file() {
                sched_tunables.insert(name, read_trim(&e.path()));
            }
        }
    }
    let mut numa_nodes = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(sys_root.join("devices/system/node")) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(id) = name.strip_prefix("node").and_then(|n| n.parse().ok()) {
                numa_nodes.insert(id, read_trim(&e.path().join("cpulist")));
            }
        }
    }
    let online = read_trim(&sys_root.join("devices/system/cpu/online"));
    let (sched_debugfs, sched_debugfs_unavailable) = match read_sched_debugfs(sys_root) {
        Ok(m) => (m, None),
        Err(why) => (BTreeMap::new(), Some(why)),
    };
    HostContext {
        hostname,
        kernel_release,
        kernel_version,
        arch,
        cpu_model: parse_cpu_model(&read_trim(&proc_root.join("cpuinfo"))),
        online_cpus: crate::cpulist::parse_cpu_list(&online).map_or(0, |s| s.len() as u32),
        mem_total_kb: parse_mem_total_kb(&read_trim(&proc_root.join("meminfo"))),
        // SAFETY: sysconf has no preconditions.
        user_hz: u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100),
        sched_tunables,
        sched_debugfs,
        sched_debugfs_unavailable,
        numa_nodes,
        cmdline: read_trim(&proc_root.join("cmdline")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsers() {
        assert_eq!(
            parse_cpu_model("processor\t: 0\nmodel name\t: Foo CPU @ 2GHz\n"),
            "Foo CPU @ 2GHz"
        );
        assert_eq!(parse_cpu_model(""), "");
        assert_eq!(
            parse_mem_total_kb("MemTotal:       24576000 kB\n"),
            24_576_000
        );
        assert_eq!(parse_mem_total_kb("junk"), 0);
    }

    #[test]
    fn synthetic_tree_and_live() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("proc");
        let s = d.path().join("sys");
        std::fs::create_dir_all(p.join("sys/kernel")).unwrap();
        std::fs::create_dir_all(s.join("devices/system/node/node0")).unwrap();
        std::fs::create_dir_all(s.join("devices/system/cpu")).unwrap();
        std::fs::write(p.join("sys/kernel/sched_autogroup_enabled"), "1\n").unwrap();
        std::fs::write(p.join("sys/kernel/other"), "1\n").unwrap();
        std::fs::write(p.join("cmdline"), "quiet delayacct\n").unwrap();
        std::fs::write(s.join("devices/system/node/node0/cpulist"), "0-3\n").unwrap();
        std::fs::write(s.join("devices/system/cpu/online"), "0-3\n").unwrap();
        let h = read_host_context(&p, &s);
        assert_eq!(h.sched_tunables.len(), 1);
        assert_eq!(h.numa_nodes.get(&0).map(String::as_str), Some("0-3"));
        assert_eq!(h.online_cpus, 4);
        assert_eq!(h.cmdline, "quiet delayacct");
        assert!(h.sched_debugfs.is_empty());
        let why = h.sched_debugfs_unavailable.unwrap();
        assert!(why.starts_with("debugfs not mounted"), "{why}");
        let live = read_host_context(Path::new("/proc"), Path::new("/sys"));
        assert!(
            live.sched_debugfs.is_empty() != live.sched_debugfs_unavailable.is_none(),
            "{live:?}"
        );
        assert!(!live.kernel_release.is_empty());
        assert!(live.online_cpus >= 1);
        assert!(live.mem_total_kb > 0);
    }

    #[test]
    fn sched_debugfs_fixture() {
        let d = tempfile::tempdir().unwrap();
        let sched = d.path().join("kernel/debug/sched");
        std::fs::create_dir_all(sched.join("numa_balancing")).unwrap();
        std::fs::create_dir_all(sched.join("domains/cpu0")).unwrap();
        std::fs::write(sched.join("base_slice_ns"), "3000000\n").unwrap();
        std::fs::write(sched.join("preempt"), "none voluntary (full)\n").unwrap();
        std::fs::write(sched.join("debug"), "Sched Debug\ncpu#0\n").unwrap();
        std::fs::write(sched.join("domains/cpu0/flags"), "x\n").unwrap();
        std::fs::write(sched.join("numa_balancing/scan_delay_ms"), "1000\n").unwrap();
        let m = read_sched_debugfs(d.path()).unwrap();
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["base_slice_ns", "numa_balancing/scan_delay_ms", "preempt"]
        );
        assert_eq!(m["preempt"], "none voluntary (full)");
        // debugfs mounted but no sched directory: an older kernel.
        let old = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(old.path().join("kernel/debug/tracing")).unwrap();
        let why = read_sched_debugfs(old.path()).unwrap_err();
        assert!(why.contains("kernel before 5.13"), "{why}");
        let none = tempfile::tempdir().unwrap();
        let why = read_sched_debugfs(none.path()).unwrap_err();
        assert!(why.starts_with("debugfs not mounted"), "{why}");
    }
}
