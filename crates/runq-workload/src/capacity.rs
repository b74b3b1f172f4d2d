//! Whether the host can hold a run, decided before the first fork: a
//! scenario asking for 100,000 workers must be refused with the limit it
//! would hit, not fork until the host has 10,000 tasks and a load of
//! 4,000.

use std::path::Path;

use runq_kernel::cgroup::pids::PidsRoom;

/// Workers per online CPU allowed unless the caller raises the cap.
pub const DEFAULT_WORKERS_PER_CPU: usize = 1024;

/// Memory a worker costs at least (stack, page tables, the pages its copy
/// of runq touches), for the MemAvailable check.
pub const MIN_BYTES_PER_WORKER: u64 = 2 << 20;

/// What the host offers, read from procfs.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// The tightest pids limit on runq's own cgroup chain (workers are
    /// forked there before they are moved).
    pub pids: Option<PidsRoom>,
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
            pids: runq_kernel::cgroup::pids::own_pids_room(),
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
        if let Some(p) = self.pids.as_ref().filter(|p| workers as u64 > p.room()) {
            return Err(format!(
                "{workers} workers do not fit the pids limit of {} (pids.max {}, in use {}: \
                 room for {}); raise pids.max there or run at most {} workers",
                p.dir.display(),
                p.max,
                p.current,
                p.room(),
                p.room()
            ));
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

/// What limit a failed fork most likely met, as a clause to follow the
/// error: EAGAIN is the pids controller or RLIMIT_NPROC, ENOMEM memory.
pub fn fork_failure_hint(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EAGAIN) => match runq_kernel::cgroup::pids::own_pids_room() {
            Some(p) if p.room() == 0 => format!(
                "; the pids limit of {} is full (pids.max {}, in use {}): raise pids.max \
                 there or run fewer workers",
                p.dir.display(),
                p.max,
                p.current
            ),
            _ => "; a process limit was reached (RLIMIT_NPROC, ulimit -u; a cgroup's \
                  pids.max; kernel.threads-max): raise it or run fewer workers"
                .into(),
        },
        Some(libc::ENOMEM) => "; out of memory (a cgroup's memory.max, or MemAvailable): \
                               raise the limit or run fewer workers"
            .into(),
        _ => String::new(),
    }
}

/// Checks that every group's buffers (see
/// [`crate::WorkType::buffer_bytes`]) fit in MemAvailable together; the
/// error names the largest group and the parameter to lower.
pub fn check_buffers(
    groups: &[(String, crate::WorkType, usize)],
    mem_available: Option<u64>,
) -> Result<(), String> {
    let Some(available) = mem_available else {
        return Ok(());
    };
    let needs: Vec<(u64, &str, &str)> = groups
        .iter()
        .map(|(name, work, workers)| {
            let (bytes, param) = work.buffer_bytes(*workers);
            (bytes, name.as_str(), param)
        })
        .collect();
    let total: u64 = needs.iter().map(|n| n.0).fold(0, u64::saturating_add);
    if total <= available {
        return Ok(());
    }
    let (bytes, name, param) = needs
        .iter()
        .copied()
        .max_by_key(|n| n.0)
        .unwrap_or((0, "", ""));
    Err(format!(
        "the groups' buffers need {} MiB and MemAvailable is {} MiB (group {name}: {} MiB); \
         lower {param}",
        total >> 20,
        available >> 20,
        bytes >> 20
    ))
}

/// Checks that the groups' files (see [`crate::WorkType::file_bytes`])
/// fit in the free space of `dir`, where they are made.
pub fn check_files(groups: &[(String, crate::WorkType, usize)], dir: &Path) -> Result<(), String> {
    let total: u64 = groups
        .iter()
        .map(|(_, work, workers)| work.file_bytes(*workers))
        .fold(0, u64::saturating_add);
    if total == 0 {
        return Ok(());
    }
    let Some(free) = free_bytes(dir) else {
        return Ok(());
    };
    if total <= free {
        return Ok(());
    }
    Err(format!(
        "the groups' files need {} MiB and {} has {} MiB free; lower file_kb or set TMPDIR",
        total >> 20,
        dir.display(),
        free >> 20
    ))
}

/// Free bytes for an unprivileged writer on the file system of `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain data filled by the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
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

    #[test]
    fn files_past_the_free_space_are_refused() {
        let big = crate::WorkType::from_name("IoRandRead")
            .unwrap()
            .with_params(&[("file_kb".into(), "16777216".into())])
            .unwrap();
        let groups = vec![("io".to_string(), big, 1 << 20)];
        let e = check_files(&groups, Path::new("/tmp")).unwrap_err();
        assert!(e.contains("lower file_kb or set TMPDIR"), "{e}");
        let small = crate::WorkType::from_name("IoRandRead").unwrap();
        assert!(check_files(&[("io".to_string(), small, 2)], Path::new("/tmp")).is_ok());
    }

    #[test]
    fn buffers_past_mem_available_are_refused_with_the_parameter() {
        let big = crate::WorkType::from_name("CachePressure")
            .unwrap()
            .with_params(&[("size_kb".into(), "16777216".into())])
            .unwrap();
        let spin = crate::WorkType::from_name("SpinWait").unwrap();
        let groups = vec![
            ("cache".to_string(), big, 2),
            ("spin".to_string(), spin, 64),
        ];
        let e = check_buffers(&groups, Some(6 << 30)).unwrap_err();
        assert!(
            e.contains("need 32768 MiB and MemAvailable is 6144 MiB"),
            "{e}"
        );
        assert!(
            e.contains("group cache") && e.ends_with("lower size_kb"),
            "{e}"
        );
        assert!(check_buffers(&groups, Some(40 << 30)).is_ok());
        assert!(check_buffers(&groups, None).is_ok());
    }

    fn host() -> HostLimits {
        HostLimits {
            cpus: 2,
            pid_max: Some(4_194_304),
            threads_max: Some(190_000),
            tasks_now: Some(300),
            nproc_limit: None,
            mem_available: Some(20 << 30),
            pids: None,
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
            ..h.clone()
        };
        assert!(small
            .check(150, 1024)
            .unwrap_err()
            .contains("RLIMIT_NPROC (100)"));
        let boxed = HostLimits {
            pids: Some(PidsRoom {
                dir: "/sys/fs/cgroup/box".into(),
                max: 8,
                current: 3,
            }),
            ..h.clone()
        };
        let e = boxed.check(12, 1024).unwrap_err();
        assert!(e.contains("pids.max 8, in use 3: room for 5"), "{e}");
        assert!(boxed.check(5, 1024).is_ok());
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
