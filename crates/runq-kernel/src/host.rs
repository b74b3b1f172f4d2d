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
        let live = read_host_context(Path::new("/proc"), Path::new("/sys"));
        assert!(!live.kernel_release.is_empty());
        assert!(live.online_cpus >= 1);
        assert!(live.mem_total_kb > 0);
    }
}
