//! Walking `/proc`: the processes, the threads of one, a task's name, and
//! the effective capabilities of the current process.

use std::io;
use std::path::Path;

/// Numeric entries of a directory (pids under `/proc`, tids under
/// `/proc/PID/task`).
fn numeric_entries(dir: &Path) -> io::Result<Vec<u32>> {
    Ok(std::fs::read_dir(dir)?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect())
}

/// Every process under `proc_root`.
pub fn pids(proc_root: &Path) -> io::Result<Vec<u32>> {
    numeric_entries(proc_root)
}

/// Every thread of `pid`; an error when the process does not exist.
pub fn tids(proc_root: &Path, pid: u32) -> io::Result<Vec<u32>> {
    numeric_entries(&proc_root.join(pid.to_string()).join("task"))
}

/// A task's `comm` file (its name, at most 15 bytes), trimmed.
pub fn read_comm(task_dir: &Path) -> Option<String> {
    std::fs::read_to_string(task_dir.join("comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// The `CapEff` mask of a `status` file.
pub fn parse_cap_eff(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
}

/// True when this process has capability `cap` (its number, e.g. 39 for
/// CAP_BPF) in its effective set.
pub fn has_capability(cap: u32) -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| parse_cap_eff(&s))
        .is_some_and(|mask| cap < 64 && mask & (1 << cap) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_a_synthetic_proc() {
        let dir = tempfile::tempdir().unwrap();
        for tid in [7, 9] {
            let t = dir.path().join(format!("7/task/{tid}"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("comm"), format!("worker-{tid}\n")).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("self")).unwrap();
        assert_eq!(pids(dir.path()).unwrap(), vec![7]);
        let mut t = tids(dir.path(), 7).unwrap();
        t.sort();
        assert_eq!(t, vec![7, 9]);
        assert!(tids(dir.path(), 8).is_err());
        assert_eq!(
            read_comm(&dir.path().join("7/task/9")).as_deref(),
            Some("worker-9")
        );
        assert_eq!(read_comm(&dir.path().join("7/task/1")), None);
    }

    #[test]
    fn reads_the_effective_capabilities() {
        let status = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000000c000000000\n";
        assert_eq!(parse_cap_eff(status), Some(0xc0_0000_0000));
        assert_eq!(parse_cap_eff("Name: x\n"), None);
        assert_eq!(parse_cap_eff("CapEff:\tzz\n"), None);
    }
}
