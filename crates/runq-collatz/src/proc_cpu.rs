//! CPU time of a process and all its descendants, from /proc: how much
//! the profiler itself consumed during a sweep point.

use std::collections::HashMap;
use std::path::Path;

/// The fields of /proc/PID/stat this module needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatTimes {
    /// Parent pid.
    pub ppid: i32,
    /// utime + stime + cutime + cstime, in clock ticks.
    pub ticks: u64,
}

/// The stat times of /proc/PID/stat text (runq-kernel's parser).
pub fn parse_stat(text: &str) -> Option<StatTimes> {
    let st = runq_kernel::proc::stat::parse_stat(text.as_bytes())?;
    Some(StatTimes {
        ppid: i32::try_from(st.ppid).ok()?,
        ticks: st.utime + st.stime + st.cutime + st.cstime,
    })
}

/// Every live process's stat times under `proc_root`.
fn all_processes(proc_root: &Path) -> HashMap<i32, StatTimes> {
    let Ok(dir) = std::fs::read_dir(proc_root) else {
        return HashMap::new();
    };
    dir.filter_map(|e| {
        let pid: i32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let text = std::fs::read_to_string(proc_root.join(pid.to_string()).join("stat")).ok()?;
        Some((pid, parse_stat(&text)?))
    })
    .collect()
}

/// CPU seconds of `root` and its live descendants (their reaped children
/// included through cutime/cstime).
pub fn tree_cpu_seconds(proc_root: &Path, root: i32) -> f64 {
    let procs = all_processes(proc_root);
    let mut total = 0u64;
    let mut frontier = vec![root];
    while let Some(pid) = frontier.pop() {
        if let Some(t) = procs.get(&pid) {
            total += t.ticks;
        }
        frontier.extend(procs.iter().filter(|(_, t)| t.ppid == pid).map(|(p, _)| *p));
    }
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    total as f64 / hz
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields after start_time (23..52) of a real stat line.
    const TAIL: &str =
        " 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0";

    #[test]
    fn parses_names_with_spaces_and_parens() {
        let text = format!(
            "42 (my (odd) prog) S 7 42 42 0 -1 4194560 10 0 0 0 150 25 3 2 20 0 1 0 100{}\n",
            TAIL
        );
        assert_eq!(
            parse_stat(&text),
            Some(StatTimes {
                ppid: 7,
                ticks: 180
            })
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S"), None);
    }

    #[test]
    fn sums_a_synthetic_tree() {
        let dir = tempfile::tempdir().unwrap();
        let write = |pid: i32, ppid: i32, utime: u64| {
            let d = dir.path().join(pid.to_string());
            std::fs::create_dir_all(&d).unwrap();
            let line =
                format!("{pid} (p) S {ppid} 0 0 0 0 0 0 0 0 0 {utime} 0 0 0 20 0 1 0 1{TAIL}\n");
            std::fs::write(d.join("stat"), line).unwrap();
        };
        write(10, 1, 100);
        write(11, 10, 50);
        write(12, 11, 25);
        write(20, 1, 1000);
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let secs = tree_cpu_seconds(dir.path(), 10);
        assert!((secs - 175.0 / hz).abs() < 1e-9, "{secs}");
    }

    #[test]
    fn sees_cpu_burned_by_this_process() {
        // Burn 150 ms of this thread's own CPU (not of wall time, which a
        // busy host stretches: 150 ms of wall once gave 20 ms of CPU).
        let t0 = runq_kernel::clock::thread_cpu_ns();
        let mut x = 1u64;
        while runq_kernel::clock::thread_cpu_ns() - t0 < 150_000_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let secs = tree_cpu_seconds(Path::new("/proc"), std::process::id() as i32);
        assert!(secs >= 0.05, "only {secs} s of CPU seen");
    }
}
