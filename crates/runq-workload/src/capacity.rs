//! Whether the host can hold a run, decided before the first fork: a
//! scenario asking for 100,000 workers must be refused with the limit it
//! would hit, not fork until the host has 10,000 tasks and a load of
//! 4,000.

use std::path::Path;

/// Workers per online CPU allowed unless the caller raises the cap.
pub const DEFAULT_WORKERS_PER_CPU: usize = 1024;

/// Memory a worker costs at least (stack, page tables, the pages its copy
/// of runq touches), for the MemAvailable check.
pub const MIN_BYTES_PER_WORKER: u64 = 2 << 20;

/// What the host offers, read from procfs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLimits {
    /// Online CPUs.
    pub cpus: usize,
    /// `kernel.pid_max`.
    pub pid_max: Option<u64>,
    /// `kernel.threads-max`.
    pub threads_max: Option<u64>,
    /// Tasks (threads) on the host now (`/proc/loadavg`).
    pub tasks_now: Option<u64>,
    /// RLIMIT_NPROC's soft limit (`None`: unlimited).
    pub nproc_limit: Option<u64>,
    /// MemAvailable, bytes.
    pub mem_available: Option<u64>,
}

impl HostLimits {
    /// Reads the limits of this host.
    pub fn read(proc_root: &Path) -> Self {
        let num = |rel: &str| -> Option<u64> {
            std::fs::read_to_string(proc_root.join(rel))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        let tasks_now = std::fs::read_to_string(proc_root.join("loadavg"))
            .ok()
            .and_then(|l| l.split_whitespace().nth(3)?.split_once('/')?.1.parse().ok());
        let mem_available = std::fs::read_to_string(proc_root.join("meminfo"))
            .ok()
            .and_then(|m| {
                let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
                let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
                Some(kib * 1024)
            });
        HostLimits {
            cpus: runq_kernel::cpulist::online_cpus().len().max(1),
            pid_max: num("sys/kernel/pid_max"),
            threads_max: num("sys/kernel/threads-max"),
            tasks_now,
            nproc_limit: nproc_soft_limit(),
            mem_available,
        }
    }

    /// Checks that `workers` more tasks fit, with at most `per_cpu` workers
    /// per online CPU; the error names the limit and how to get past it.
    pub fn check(&self, workers: usize, per_cpu: usize) -> Result<(), String> {
        let cap = per_cpu.saturating_mul(self.cpus);
        if workers > cap {
            return Err(format!(
                "{workers} workers is more than {per_cpu} per CPU ({cap} on {} CPUs); \
                 raise the cap with --max-workers-per-cpu if the host can take it",
                self.cpus
            ));
        }
        let wanted = workers as u64 + self.tasks_now.unwrap_or(0);
        for (limit, name) in [
            (self.pid_max, "kernel.pid_max"),
            (self.threads_max, "kernel.threads-max"),
        ] {
            if let Some(l) = limit.filter(|&l| wanted > l * 9 / 10) {
                return Err(format!(
                    "{workers} workers and the host's {} tasks would pass 90% of {name} ({l})",
                    self.tasks_now.unwrap_or(0)
                ));
            }
        }
        if let Some(l) = self.nproc_limit.filter(|&l| workers as u64 > l) {
            return Err(format!(
                "{workers} workers is more than RLIMIT_NPROC ({l}); raise it with ulimit -u"
            ));
        }
        let need = workers as u64 * MIN_BYTES_PER_WORKER;
        if let Some(m) = self.mem_available.filter(|&m| need > m) {
            return Err(format!(
                "{workers} workers need at least {} MiB, and MemAvailable is {} MiB",
                need >> 20,
                m >> 20
            ));
        }
        Ok(())
    }
}

/// RLIMIT_NPROC's soft limit, `None` when unlimited.
fn nproc_soft_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut lim) };
    (rc == 0 && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostLimits {
        HostLimits {
            cpus: 2,
            pid_max: Some(4_194_304),
            threads_max: Some(190_000),
            tasks_now: Some(300),
            nproc_limit: None,
            mem_available: Some(20 << 30),
        }
    }

    #[test]
    fn each_limit_is_named() {
        let h = host();
        assert!(h.check(2000, DEFAULT_WORKERS_PER_CPU).is_ok());
        let e = h.check(100_000, DEFAULT_WORKERS_PER_CPU).unwrap_err();
        assert!(e.contains("more than 1024 per CPU (2048 on 2 CPUs)"), "{e}");
        let e = h.check(180_000, 1 << 20).unwrap_err();
        assert!(e.contains("kernel.threads-max (190000)"), "{e}");
        let small = HostLimits {
            nproc_limit: Some(100),
            ..h
        };
        assert!(small
            .check(150, 1024)
            .unwrap_err()
            .contains("RLIMIT_NPROC (100)"));
        let tight = HostLimits {
            mem_available: Some(100 << 20),
            ..h
        };
        assert!(tight
            .check(100, 1024)
            .unwrap_err()
            .contains("MemAvailable is 100 MiB"));
    }

    #[test]
    fn this_host_is_read() {
        let h = HostLimits::read(Path::new("/proc"));
        assert!(h.pid_max.is_some() && h.threads_max.is_some() && h.tasks_now.is_some());
        assert!(h.mem_available.is_some());
    }
}
