//! Per-worker counts of read and parse outcomes, merged into the
//! snapshot's probe / parse / taskstats summaries.

use runq_kernel::proc::reader::ReadError;
use runq_kernel::taskstats::QueryError;

use crate::model::{CtprofParseSummary, CtprofProbeSummary, TaskstatsSummary};

/// The per-thread sources whose outcomes are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `/proc/<tid>/stat`.
    Stat = 0,
    /// `/proc/<tid>/schedstat` (a thread whose taskstats answer carried the
    /// same three figures counts as read without the file).
    Schedstat,
    /// `/proc/<tid>/sched`.
    Sched,
    /// `/proc/<tid>/status` (fallback when sched is missing).
    Status,
    /// `/proc/<tid>/io`.
    Io,
    /// `/proc/<tid>/cgroup` (a thread whose process's cgroup holds whole
    /// processes counts the read of its process's file).
    Cgroup,
    /// `/proc/<pid>/smaps_rollup` (leaders).
    SmapsRollup,
    /// `sched_getaffinity(2)`.
    Affinity,
}

const N: usize = 8;
const NAMES: [&str; N] = [
    "stat",
    "schedstat",
    "sched",
    "status",
    "io",
    "cgroup",
    "smaps_rollup",
    "affinity",
];

/// Counters filled by one capture worker.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    ok: [u64; N],
    missing: [u64; N],
    denied: [u64; N],
    other: [u64; N],
    parse_failed: [u64; N],
    /// Threads whose stat could not be read (exited mid-walk).
    pub vanished: u64,
    /// Sched files without schedstat keys.
    pub sched_without_schedstats: u64,
    /// Taskstats answers.
    pub ts_ok: u64,
    /// Taskstats `EPERM`.
    pub ts_eperm: u64,
    /// Taskstats `ESRCH`.
    pub ts_esrch: u64,
    /// Other taskstats failures.
    pub ts_other: u64,
}

impl Tally {
    /// Records the outcome of reading `src`.
    pub fn read<T>(&mut self, src: Source, r: &Result<T, ReadError>) {
        let i = src as usize;
        match r {
            Ok(_) => self.ok[i] += 1,
            Err(ReadError::Missing) => self.missing[i] += 1,
            Err(ReadError::Denied) => self.denied[i] += 1,
            Err(ReadError::Other(_)) => self.other[i] += 1,
        }
    }

    /// Records a file that was read but did not parse.
    pub fn parse_failed(&mut self, src: Source) {
        self.parse_failed[src as usize] += 1;
    }

    /// Records a taskstats outcome.
    pub fn taskstats(&mut self, r: &Result<runq_kernel::taskstats::Taskstats, QueryError>) {
        match r {
            Ok(_) => self.ts_ok += 1,
            Err(QueryError::Permission) => self.ts_eperm += 1,
            Err(QueryError::NoTask) => self.ts_esrch += 1,
            Err(QueryError::Other(_)) => self.ts_other += 1,
        }
    }

    /// Adds another worker's counts.
    pub fn merge(&mut self, o: &Tally) {
        for i in 0..N {
            self.ok[i] += o.ok[i];
            self.missing[i] += o.missing[i];
            self.denied[i] += o.denied[i];
            self.other[i] += o.other[i];
            self.parse_failed[i] += o.parse_failed[i];
        }
        self.vanished += o.vanished;
        self.sched_without_schedstats += o.sched_without_schedstats;
        self.ts_ok += o.ts_ok;
        self.ts_eperm += o.ts_eperm;
        self.ts_esrch += o.ts_esrch;
        self.ts_other += o.ts_other;
    }

    /// The probe summary (zero counts are left out of the maps).
    pub fn probe_summary(&self, listed: u64) -> CtprofProbeSummary {
        let map = |a: &[u64; N]| {
            NAMES
                .iter()
                .zip(a)
                .filter(|(_, &v)| v > 0)
                .map(|(k, &v)| (k.to_string(), v))
                .collect()
        };
        CtprofProbeSummary {
            threads_listed: listed,
            threads_vanished: self.vanished,
            read_ok: map(&self.ok),
            read_missing: map(&self.missing),
            read_denied: map(&self.denied),
            read_other: map(&self.other),
            jemalloc_processes: 0,
        }
    }

    /// The parse summary.
    pub fn parse_summary(&self) -> CtprofParseSummary {
        CtprofParseSummary {
            failed: NAMES
                .iter()
                .zip(&self.parse_failed)
                .filter(|(_, &v)| v > 0)
                .map(|(k, &v)| (k.to_string(), v))
                .collect(),
            sched_without_schedstats: self.sched_without_schedstats,
        }
    }

    /// The taskstats summary.
    pub fn taskstats_summary(&self) -> TaskstatsSummary {
        TaskstatsSummary {
            ok_count: self.ts_ok,
            eperm_count: self.ts_eperm,
            esrch_count: self.ts_esrch,
            other_err_count: self.ts_other,
            unavailable: None,
            delayacct_enabled: None,
        }
    }
}
