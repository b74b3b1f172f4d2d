//! How busy the host was beside the run: the whole host's CPU time over
//! the run (`/proc/stat`) less what the run's workers and runq itself
//! used. A FAIL on a busy host says so, with this figure.

use std::path::Path;

use serde::{Deserialize, Serialize};

use runq_kernel::cpustat::{read_cpu_times, CpuTimes};

use crate::report::WorkerReport;

/// Other tasks' load, as a share of the host's CPUs, past which a FAIL
/// names the load as a possible cause.
pub const BUSY_SHARE: f64 = 0.1;

/// The host's load over one run, in CPUs (1.0 = one CPU busy throughout).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HostLoad {
    /// Online CPUs.
    pub cpus: usize,
    /// Every task's CPU time over the run, in CPUs.
    pub busy_cpus: f64,
    /// The run's workers and runq's own process.
    pub run_cpus: f64,
    /// Everything else: `busy_cpus - run_cpus` (0 at least; thread-mode
    /// workers count twice in `run_cpus`, so it errs low).
    pub outside_cpus: f64,
    /// runq's own threads (its driver, sampler, host monitor; not its
    /// thread-mode workers), in CPUs: what the instrument itself took.
    #[serde(default)]
    pub runq_cpus: f64,
}

impl HostLoad {
    /// Whether tasks outside the run used more than [`BUSY_SHARE`] of
    /// the host.
    pub fn busy(&self) -> bool {
        self.outside_cpus > BUSY_SHARE * self.cpus as f64
    }

    /// One line for a FAIL's report.
    pub fn describe(&self) -> String {
        format!(
            "{} on average (the run itself {:.2}); a FAIL here may be that load's, not the \
             scheduler's",
            self.brief(),
            self.run_cpus
        )
    }

    /// The figure alone, for a FAIL's headline on stderr.
    pub fn brief(&self) -> String {
        format!(
            "the host was busy: tasks outside the run used {:.2} of its {} CPUs",
            self.outside_cpus, self.cpus
        )
    }
}

/// The readings at the run's start and end.
pub(super) struct HostLoadMeter {
    host: Option<CpuTimes>,
    own_ns: u64,
    end: Option<(CpuTimes, u64)>,
    /// runq's threads at the end (thread-mode workers among them).
    own_tids: Vec<u32>,
}

impl HostLoadMeter {
    /// Reads the host and runq's own CPU time now.
    pub(super) fn start() -> Self {
        HostLoadMeter {
            host: read_cpu_times(Path::new("/proc")),
            own_ns: runq_kernel::clock::process_cpu_ns(),
            end: None,
            own_tids: Vec::new(),
        }
    }

    /// Reads them again at the run's end (before the collection).
    pub(super) fn stop(&mut self) {
        let end = read_cpu_times(Path::new("/proc"));
        self.end = end.map(|e| (e, runq_kernel::clock::process_cpu_ns()));
        self.own_tids = std::fs::read_dir("/proc/self/task")
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
    }

    /// The load between [`Self::start`] and [`Self::stop`], a run of
    /// `run_ns` whose workers reported `reports`.
    pub(super) fn finish(self, run_ns: u64, reports: &[WorkerReport]) -> Option<HostLoad> {
        let (end, own_end) = self.end?;
        let busy_ns = end.busy_ns.saturating_sub(self.host?.busy_ns);
        let own_ns = own_end.saturating_sub(self.own_ns);
        let workers_ns: u64 = reports.iter().map(|r| r.cpu_time_ns).sum();
        let thread_workers_ns: u64 = reports
            .iter()
            .filter(|r| self.own_tids.contains(&r.tid))
            .map(|r| r.cpu_time_ns)
            .sum();
        let mut load = load_of(busy_ns, workers_ns + own_ns, run_ns);
        load.runq_cpus = own_ns.saturating_sub(thread_workers_ns) as f64 / run_ns.max(1) as f64;
        log::debug!("host load over the run: {load:?}");
        Some(load)
    }
}

/// The load from CPU times over a window of `run_ns`.
fn load_of(busy_ns: u64, run_ns_used: u64, window_ns: u64) -> HostLoad {
    let window = window_ns.max(1) as f64;
    let busy_cpus = busy_ns as f64 / window;
    let run_cpus = run_ns_used as f64 / window;
    HostLoad {
        cpus: runq_kernel::cpulist::online_cpus().len().max(1),
        busy_cpus,
        run_cpus,
        outside_cpus: (busy_cpus - run_cpus).max(0.0),
        runq_cpus: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_load_is_what_the_run_did_not_use() {
        let l = load_of(3_000_000_000, 1_000_000_000, 1_000_000_000);
        assert!((l.busy_cpus - 3.0).abs() < 1e-9 && (l.outside_cpus - 2.0).abs() < 1e-9);
        let quiet = load_of(900_000_000, 1_000_000_000, 1_000_000_000);
        assert_eq!(quiet.outside_cpus, 0.0);
        let busy = HostLoad {
            cpus: 2,
            outside_cpus: 1.5,
            ..HostLoad::default()
        };
        assert!(busy.busy() && busy.brief().ends_with("used 1.50 of its 2 CPUs"));
        assert!(busy.describe().starts_with(&busy.brief()));
        assert!(!HostLoad {
            cpus: 16,
            outside_cpus: 1.0,
            ..busy
        }
        .busy());
    }
}
