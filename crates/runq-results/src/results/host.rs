//! The host facts a saved result records: what makes two results
//! comparable (or not).

use std::path::Path;

use serde::{Deserialize, Serialize};

/// Facts about the host that make two results comparable (or not).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    /// Host name.
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel_release: String,
    /// CPU model.
    pub cpu_model: String,
    /// Online CPUs.
    pub online_cpus: u32,
    /// `v2` (unified only), `hybrid` (controllers on v1, v2 mounted) or
    /// `v1`, or `none`.
    pub cgroup_layout: String,
    /// The sched_ext scheduler loaded (`root/ops`), or `none`/`no sched_ext`.
    pub sched_ext: String,
    /// The scheduler command runq started for the run, if any.
    pub scheduler_command: Option<String>,
    /// The clock the work loops timed with: `tsc` or `monotonic` (see
    /// `runq_kernel::clock::fast`; `RUNQ_CLOCK=monotonic` forces the latter).
    /// Empty in documents written before it was recorded.
    #[serde(default)]
    pub loop_clock: String,
}

impl HostFacts {
    /// Reads the live host's facts (through runq-kernel's readers of
    /// /proc and /sys).
    pub fn read(scheduler_command: Option<String>) -> Self {
        let ctx = runq_kernel::host::read_host_context(Path::new("/proc"), Path::new("/sys"));
        let layout = match runq_kernel::cgroup::CgroupLayout::detect() {
            Ok(l) if l.hierarchies.is_empty() => "none",
            Ok(l) if l.hierarchies.iter().all(|h| h.is_v2()) => "v2",
            Ok(l) if l.hierarchies.iter().any(|h| h.is_v2()) => "hybrid",
            Ok(_) => "v1",
            Err(_) => "unknown",
        };
        let sched_ext = match runq_kernel::sched_ext::read_sched_ext(Path::new("/sys")) {
            None => "no sched_ext".to_string(),
            Some(s) => s
                .ops
                .filter(|o| !o.is_empty())
                .unwrap_or_else(|| format!("none ({})", s.state)),
        };
        HostFacts {
            hostname: ctx.hostname,
            kernel_release: ctx.kernel_release,
            cpu_model: ctx.cpu_model,
            online_cpus: ctx.online_cpus,
            cgroup_layout: layout.to_string(),
            sched_ext,
            scheduler_command,
            loop_clock: runq_kernel::clock::fast::init().name().to_string(),
        }
    }
}
