//! The host's CPU time from `/proc/stat`'s aggregate `cpu` line: how busy
//! the whole host was between two readings, to tell a run's own load from
//! what else ran beside it.

use std::path::Path;

/// Busy and total CPU time of the host so far, ns (all CPUs summed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq + steal.
    pub busy_ns: u64,
    /// busy + idle + iowait.
    pub total_ns: u64,
}

/// Parses the aggregate `cpu` line of `/proc/stat` text, with `tick_ns`
/// nanoseconds per clock tick (USER_HZ).
pub fn parse_cpu_times(text: &str, tick_ns: u64) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    let at = |i: usize| f.get(i).copied().unwrap_or(0);
    // user nice system idle iowait irq softirq steal (guest is in user).
    let busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
    let total = busy + at(3) + at(4);
    (f.len() >= 4).then_some(CpuTimes {
        busy_ns: busy.saturating_mul(tick_ns),
        total_ns: total.saturating_mul(tick_ns),
    })
}

/// Reads `/proc/stat` under `proc_root`.
pub fn read_cpu_times(proc_root: &Path) -> Option<CpuTimes> {
    let text = std::fs::read_to_string(proc_root.join("stat")).ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let tick_ns = 1_000_000_000 / u64::try_from(hz).ok().filter(|&h| h > 0)?;
    parse_cpu_times(&text, tick_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_aggregate_line_splits_busy_from_idle() {
        let text = "cpu  100 5 50 800 10 3 2 1 0 0\ncpu0 50 2 25 400 5 1 1 0 0 0\nintr 1\n";
        let t = parse_cpu_times(text, 10_000_000).unwrap();
        assert_eq!(t.busy_ns, (100 + 5 + 50 + 3 + 2 + 1) * 10_000_000);
        assert_eq!(t.total_ns, t.busy_ns + (800 + 10) * 10_000_000);
        assert!(parse_cpu_times("intr 1\n", 1).is_none());
        assert!(parse_cpu_times("cpu  1 x\n", 1).is_none());
    }

    #[test]
    fn this_host_is_read() {
        let t = read_cpu_times(Path::new("/proc")).unwrap();
        assert!(t.total_ns >= t.busy_ns && t.total_ns > 0);
    }
}
