//! The snapshot model: one [`ThreadState`] per thread, per-cgroup stats,
//! host context and the summaries that tell "no data" from zero.
//!
//! Every field is `serde(default)` and zero values are not written, so the
//! files stay small and forward compatible: an older reader ignores fields it
//! does not know, a newer one fills fields an older writer did not write.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use runq_kernel::cgroup_stats::{
    CgroupCpuStats, CgroupMemoryStats, CgroupPidsStats, CgroupStats, CgroupVersion,
};
pub use runq_kernel::host::HostContext;
pub use runq_kernel::psi::{Psi, PsiLine, PsiResource};
pub use runq_kernel::sched_ext::SchedExtSysfs;

use crate::avail::{Capabilities, Reason, Source};
use crate::metric_types::*;

/// The schema version this build writes.
/// Schema 2 added `capabilities` and the per-thread `unavailable` map;
/// a schema-1 file loads with capabilities inferred from its summaries.
pub const SCHEMA_VERSION: u32 = 2;
/// The `format` marker that identifies a ctprof snapshot.
pub const FORMAT_NAME: &str = "runq-ctprof";

pub(crate) fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

macro_rules! thread_state {
    ($($(#[$doc:meta])* $field:ident: $ty:ty,)*) => {
        /// One thread's identity and counters at capture time. A reading that
        /// was missing collapses to the field's zero value.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct ThreadState {
            $($(#[$doc])* #[serde(skip_serializing_if = "is_default")] pub $field: $ty,)*
        }
    };
}

thread_state! {
    /// Thread id.
    tid: u32,
    /// Thread-group (process) id.
    tgid: u32,
    /// Process name (the leader's comm).
    pcomm: String,
    /// Thread name.
    comm: String,
    /// cgroup v2 path as seen from the capturing namespace.
    cgroup: String,
    /// Start time after boot, USER_HZ ticks (stat field 22).
    start_time_clock_ticks: u64,
    /// Scheduling policy name (`SCHED_OTHER`, ...).
    policy: CategoricalString,
    /// Nice value.
    nice: OrdinalI32,
    /// CPUs the thread may run on.
    cpu_affinity: CpuSet,
    /// On-CPU time, ns (schedstat field 1; `CONFIG_SCHED_INFO`).
    run_time_ns: MonotonicNs,
    /// Runqueue wait, ns (schedstat field 2; `CONFIG_SCHED_INFO`).
    wait_time_ns: MonotonicNs,
    /// Times picked to run (schedstat field 3; `CONFIG_SCHED_INFO`).
    timeslices: MonotonicCount,
    /// Voluntary context switches.
    voluntary_csw: MonotonicCount,
    /// Involuntary context switches.
    nonvoluntary_csw: MonotonicCount,
    /// Wakeups (`CONFIG_SCHEDSTATS`).
    nr_wakeups: MonotonicCount,
    /// Wakeups on the waker's CPU.
    nr_wakeups_local: MonotonicCount,
    /// Wakeups on another CPU.
    nr_wakeups_remote: MonotonicCount,
    /// Synchronous wakeups.
    nr_wakeups_sync: MonotonicCount,
    /// Wakeups that migrated the thread.
    nr_wakeups_migrate: MonotonicCount,
    /// Successful wake-affine decisions.
    nr_wakeups_affine: MonotonicCount,
    /// Wake-affine attempts.
    nr_wakeups_affine_attempts: MonotonicCount,
    /// CPU migrations.
    nr_migrations: MonotonicCount,
    /// Forced migrations.
    nr_forced_migrations: MonotonicCount,
    /// Cold migrations: printed by the kernel but never incremented (no
    /// writer); kept so a kernel that revives it shows.
    nr_migrations_cold: DeadCounter,
    /// Migrations refused by affinity.
    nr_failed_migrations_affine: MonotonicCount,
    /// Migrations refused because running.
    nr_failed_migrations_running: MonotonicCount,
    /// Migrations refused because cache-hot.
    nr_failed_migrations_hot: MonotonicCount,
    /// Total runqueue wait, ns (`CONFIG_SCHEDSTATS`).
    wait_sum: MonotonicNs,
    /// Runqueue waits.
    wait_count: MonotonicCount,
    /// Sleep time without block time: `sum_sleep_runtime - sum_block_runtime`.
    voluntary_sleep_ns: MonotonicNs,
    /// Total block time, ns.
    block_sum: MonotonicNs,
    /// Total iowait, ns.
    iowait_sum: MonotonicNs,
    /// Iowait events.
    iowait_count: MonotonicCount,
    /// Time forced idle by core scheduling, ns.
    core_forceidle_sum: MonotonicNs,
    /// Longest runqueue wait, ns.
    wait_max: PeakNs,
    /// Longest sleep, ns.
    sleep_max: PeakNs,
    /// Longest block, ns.
    block_max: PeakNs,
    /// Longest single run, ns.
    exec_max: PeakNs,
    /// Longest slice, ns.
    slice_max: PeakNs,
    /// User time, USER_HZ ticks.
    utime_clock_ticks: ClockTicks,
    /// System time, USER_HZ ticks.
    stime_clock_ticks: ClockTicks,
    /// Kernel priority (stat field 18).
    priority: OrdinalI32,
    /// CPU last run on.
    processor: OrdinalI32,
    /// Real-time priority.
    rt_priority: OrdinalU32,
    /// State letter at capture (`R`, `S`, `D`, ...).
    state: char,
    /// Current fair slice, ns (`se.slice`).
    fair_slice_ns: GaugeNs,
    /// Threads in the process (leader only, 0 elsewhere).
    nr_threads: GaugeCount,
    /// True when the thread runs under sched_ext.
    ext_enabled: bool,
    /// Minor faults.
    minflt: MonotonicCount,
    /// Major faults.
    majflt: MonotonicCount,
    /// jemalloc thread-allocated bytes (0 for other allocators).
    allocated_bytes: Bytes,
    /// jemalloc thread-deallocated bytes (0 for other allocators).
    deallocated_bytes: Bytes,
    /// smaps_rollup in kB by key (leader only).
    smaps_rollup_kb: BTreeMap<String, u64>,
    /// Bytes passed to read-like syscalls.
    rchar: Bytes,
    /// Bytes passed to write-like syscalls.
    wchar: Bytes,
    /// Read syscalls.
    syscr: MonotonicCount,
    /// Write syscalls.
    syscw: MonotonicCount,
    /// Bytes fetched from storage.
    read_bytes: Bytes,
    /// Bytes sent to storage.
    write_bytes: Bytes,
    /// Dirty bytes whose writeback this thread cancelled.
    cancelled_write_bytes: Bytes,
    /// Runqueue-wait windows (taskstats).
    cpu_delay_count: MonotonicCount,
    /// Runqueue-wait total, ns.
    cpu_delay_total_ns: MonotonicNs,
    /// Longest runqueue wait, ns.
    cpu_delay_max_ns: PeakNs,
    /// Shortest runqueue wait, ns (0 = none seen).
    cpu_delay_min_ns: PeakNs,
    /// Block-I/O waits.
    blkio_delay_count: MonotonicCount,
    /// Block-I/O wait total, ns.
    blkio_delay_total_ns: MonotonicNs,
    /// Longest block-I/O wait, ns.
    blkio_delay_max_ns: PeakNs,
    /// Shortest block-I/O wait, ns.
    blkio_delay_min_ns: PeakNs,
    /// Swap-in waits.
    swapin_delay_count: MonotonicCount,
    /// Swap-in wait total, ns.
    swapin_delay_total_ns: MonotonicNs,
    /// Longest swap-in wait, ns.
    swapin_delay_max_ns: PeakNs,
    /// Shortest swap-in wait, ns.
    swapin_delay_min_ns: PeakNs,
    /// Direct-reclaim waits.
    freepages_delay_count: MonotonicCount,
    /// Direct-reclaim wait total, ns.
    freepages_delay_total_ns: MonotonicNs,
    /// Longest direct-reclaim wait, ns.
    freepages_delay_max_ns: PeakNs,
    /// Shortest direct-reclaim wait, ns.
    freepages_delay_min_ns: PeakNs,
    /// Thrashing waits.
    thrashing_delay_count: MonotonicCount,
    /// Thrashing wait total, ns.
    thrashing_delay_total_ns: MonotonicNs,
    /// Longest thrashing wait, ns.
    thrashing_delay_max_ns: PeakNs,
    /// Shortest thrashing wait, ns.
    thrashing_delay_min_ns: PeakNs,
    /// Compaction waits.
    compact_delay_count: MonotonicCount,
    /// Compaction wait total, ns.
    compact_delay_total_ns: MonotonicNs,
    /// Longest compaction wait, ns.
    compact_delay_max_ns: PeakNs,
    /// Shortest compaction wait, ns.
    compact_delay_min_ns: PeakNs,
    /// Write-protect-copy waits.
    wpcopy_delay_count: MonotonicCount,
    /// Write-protect-copy wait total, ns.
    wpcopy_delay_total_ns: MonotonicNs,
    /// Longest write-protect-copy wait, ns.
    wpcopy_delay_max_ns: PeakNs,
    /// Shortest write-protect-copy wait, ns.
    wpcopy_delay_min_ns: PeakNs,
    /// IRQ windows charged to the thread.
    irq_delay_count: MonotonicCount,
    /// IRQ time total, ns.
    irq_delay_total_ns: MonotonicNs,
    /// Longest IRQ window, ns.
    irq_delay_max_ns: PeakNs,
    /// Shortest IRQ window, ns.
    irq_delay_min_ns: PeakNs,
    /// RSS high-water mark of the process, bytes.
    hiwater_rss_bytes: PeakBytes,
    /// Virtual-memory high-water mark of the process, bytes.
    hiwater_vm_bytes: PeakBytes,
    /// Sources this thread could not be read from, and why (host-wide
    /// reasons are in the snapshot's capabilities instead).
    #[serde(deserialize_with = "crate::avail::lenient_map")]
    unavailable: BTreeMap<Source, Reason>,
}

impl ThreadState {
    /// Marks `src` unavailable for this thread.
    pub fn mark(&mut self, src: Source, why: Reason) {
        self.unavailable.insert(src, why);
    }

    /// The key that tells two threads apart across a tid reuse.
    pub fn key(&self) -> (u32, u64) {
        (self.tid, self.start_time_clock_ticks)
    }
}

/// How many per-thread file reads succeeded or failed, by source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CtprofProbeSummary {
    /// Threads listed in /proc.
    pub threads_listed: u64,
    /// Threads that exited before their stat file was read (not recorded).
    pub threads_vanished: u64,
    /// Files read by source name (`stat`, `sched`, `schedstat`, `io`, ...).
    pub read_ok: BTreeMap<String, u64>,
    /// Files that did not exist (no kernel support, or the thread exited).
    pub read_missing: BTreeMap<String, u64>,
    /// Files the capture was not allowed to read.
    pub read_denied: BTreeMap<String, u64>,
    /// Other read errors.
    pub read_other: BTreeMap<String, u64>,
    /// Processes whose jemalloc counters were read.
    pub jemalloc_processes: u64,
}

/// Files that were read but did not parse, by source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CtprofParseSummary {
    /// Parse failures by source name.
    pub failed: BTreeMap<String, u64>,
    /// Sched files without schedstat keys (`CONFIG_SCHEDSTATS` off).
    pub sched_without_schedstats: u64,
}

/// Outcomes of the taskstats queries of one capture.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskstatsSummary {
    /// Queries answered.
    pub ok_count: u64,
    /// Queries refused (`CAP_NET_ADMIN` missing).
    pub eperm_count: u64,
    /// Threads that exited before the query.
    pub esrch_count: u64,
    /// Other failures.
    pub other_err_count: u64,
    /// Why taskstats was not queried at all, when it was not.
    pub unavailable: Option<String>,
    /// `kernel.task_delayacct` at capture (None when the sysctl is absent).
    pub delayacct_enabled: Option<bool>,
}

/// One host-wide per-thread snapshot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct CtprofSnapshot {
    /// Always [`FORMAT_NAME`]; tells a snapshot from other JSON.
    pub format: String,
    /// Schema version of the writer.
    pub schema_version: u32,
    /// Wall-clock capture time, ns since the Unix epoch.
    pub captured_at_unix_ns: u64,
    /// Capture wall time, ns.
    pub capture_duration_ns: u64,
    /// Host context; `None` in files that did not record it.
    pub host: Option<HostContext>,
    /// Every thread, sorted by (tgid, tid).
    pub threads: Vec<ThreadState>,
    /// Stats of each cgroup a thread was in, keyed by v2 path.
    pub cgroup_stats: BTreeMap<String, CgroupStats>,
    /// Read outcomes.
    pub probe_summary: Option<CtprofProbeSummary>,
    /// Parse outcomes.
    pub parse_summary: Option<CtprofParseSummary>,
    /// Taskstats outcomes.
    pub taskstats_summary: Option<TaskstatsSummary>,
    /// Host pressure.
    pub psi: Psi,
    /// sched_ext state, when the kernel has it.
    pub sched_ext: Option<SchedExtSysfs>,
    /// Host-wide availability; `None` for an in-memory snapshot built
    /// without a capture (every source then counts as read).
    pub capabilities: Option<Capabilities>,
    /// `record` only: threads that exited since the previous capture, per
    /// process and cgroup (from taskstats exit notifications).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exited: Vec<ExitedTally>,
}

impl CtprofSnapshot {
    /// An empty snapshot stamped with this build's format and version.
    pub fn new() -> Self {
        CtprofSnapshot {
            format: FORMAT_NAME.to_string(),
            schema_version: SCHEMA_VERSION,
            ..Default::default()
        }
    }

    /// This snapshot without its threads, cgroup stats and exited tally
    /// (which are the bulk of it).
    pub(crate) fn clone_header(&self) -> Self {
        CtprofSnapshot {
            format: self.format.clone(),
            schema_version: self.schema_version,
            captured_at_unix_ns: self.captured_at_unix_ns,
            capture_duration_ns: self.capture_duration_ns,
            host: self.host.clone(),
            threads: Vec::new(),
            cgroup_stats: BTreeMap::new(),
            probe_summary: self.probe_summary.clone(),
            parse_summary: self.parse_summary.clone(),
            taskstats_summary: self.taskstats_summary.clone(),
            psi: self.psi,
            sched_ext: self.sched_ext.clone(),
            capabilities: self.capabilities.clone(),
            exited: Vec::new(),
        }
    }
}

/// Threads of one process (and cgroup) that exited during an interval.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExitedTally {
    /// Thread-group id.
    pub tgid: u32,
    /// Process name (the thread's own name when the process was gone).
    pub pcomm: String,
    /// cgroup v2 path (empty when the process was gone before it was read).
    pub cgroup: String,
    /// Threads that exited.
    pub threads: u64,
    /// Their on-CPU time, ns.
    pub cpu_ns: u64,
    /// Their runqueue delay, ns (delay accounting).
    pub cpu_delay_ns: u64,
    /// Their block-I/O delay, ns (delay accounting).
    pub blkio_delay_ns: u64,
}
