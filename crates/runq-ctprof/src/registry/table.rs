//! `CTPROF_METRICS`: every per-thread metric of the snapshot.

use super::{AggRule, CtprofMetricDef, Section};

const SS: &[&str] = &["CONFIG_SCHEDSTATS"];
const SI: &[&str] = &["CONFIG_SCHED_INFO"];
const IO: &[&str] = &["CONFIG_TASK_IO_ACCOUNTING"];
const DA: &[&str] = &["CONFIG_TASK_DELAY_ACCT"];
const XA: &[&str] = &["CONFIG_TASK_XACCT"];
const NONE: &[&str] = &[];

macro_rules! m {
    ($name:ident, $rule:ident, $class:expr, $gates:expr, $section:ident, $desc:expr) => {
        CtprofMetricDef {
            name: stringify!($name),
            rule: AggRule::$rule(|t| t.$name),
            sched_class: $class,
            config_gates: $gates,
            is_dead: false,
            description: $desc,
            section: Section::$section,
        }
    };
}

macro_rules! delay {
    ($count:ident, $total:ident, $max:ident, $min:ident, $what:literal) => {
        [
            m!(
                $count,
                SumCount,
                None,
                DA,
                TaskstatsDelay,
                concat!("Taskstats ", $what, " windows observed.")
            ),
            m!(
                $total,
                SumNs,
                None,
                DA,
                TaskstatsDelay,
                concat!("Taskstats cumulative ", $what, " delay.")
            ),
            m!(
                $max,
                MaxPeak,
                None,
                DA,
                TaskstatsDelay,
                concat!("Longest single ", $what, " window.")
            ),
            m!(
                $min,
                MaxPeak,
                None,
                DA,
                TaskstatsDelay,
                concat!(
                    "Shortest non-zero ",
                    $what,
                    " window (0 = none seen; check the count)."
                )
            ),
        ]
    };
}

const PRIMARY: &[CtprofMetricDef] = &[
    CtprofMetricDef {
        name: "policy",
        rule: AggRule::Mode(|t| &t.policy),
        sched_class: None,
        config_gates: NONE,
        is_dead: false,
        description: "Scheduling policy (most frequent in the group).",
        section: Section::Primary,
    },
    m!(nice, RangeI32, None, NONE, Primary, "Nice value range."),
    m!(
        priority,
        RangeI32,
        None,
        NONE,
        Primary,
        "Kernel priority range (stat field 18)."
    ),
    m!(
        processor,
        RangeI32,
        None,
        NONE,
        Primary,
        "CPU last run on (range)."
    ),
    m!(
        rt_priority,
        RangeU32,
        None,
        NONE,
        Primary,
        "Real-time priority range."
    ),
    m!(
        state,
        ModeChar,
        None,
        NONE,
        Primary,
        "Task state letter at capture (mode)."
    ),
    m!(
        ext_enabled,
        ModeBool,
        None,
        NONE,
        Primary,
        "Runs under sched_ext (mode)."
    ),
    CtprofMetricDef {
        name: "cpu_affinity",
        rule: AggRule::Affinity(|t| &t.cpu_affinity),
        sched_class: None,
        config_gates: NONE,
        is_dead: false,
        description: "CPUs allowed; mixed groups show `N-M cpus (mixed)`.",
        section: Section::Primary,
    },
    m!(
        run_time_ns,
        SumNs,
        None,
        SI,
        Primary,
        "On-CPU time (schedstat field 1)."
    ),
    m!(
        wait_time_ns,
        SumNs,
        None,
        SI,
        Primary,
        "Runnable but waiting for a CPU (schedstat field 2)."
    ),
    m!(
        timeslices,
        SumCount,
        None,
        SI,
        Primary,
        "Times picked to run (schedstat field 3)."
    ),
    m!(
        voluntary_csw,
        SumCount,
        None,
        NONE,
        Primary,
        "Voluntary context switches (blocked or yielded)."
    ),
    m!(
        nonvoluntary_csw,
        SumCount,
        None,
        NONE,
        Primary,
        "Involuntary context switches (preempted)."
    ),
    m!(
        nr_wakeups,
        SumCount,
        Some("cfs-only"),
        SS,
        Primary,
        "Wakeups."
    ),
    m!(
        nr_wakeups_local,
        SumCount,
        Some("cfs-only"),
        SS,
        Primary,
        "Wakeups on the waker's CPU."
    ),
    m!(
        nr_wakeups_remote,
        SumCount,
        Some("cfs-only"),
        SS,
        Primary,
        "Wakeups on another CPU."
    ),
    m!(
        nr_wakeups_sync,
        SumCount,
        Some("cfs-only"),
        SS,
        Primary,
        "Synchronous wakeups."
    ),
    m!(
        nr_wakeups_migrate,
        SumCount,
        Some("cfs-only"),
        SS,
        Primary,
        "Wakeups that moved the thread to another CPU."
    ),
    m!(
        nr_wakeups_affine,
        SumCount,
        Some("cfs-only"),
        SS,
        Primary,
        "Successful wake_affine() decisions."
    ),
    m!(
        nr_wakeups_affine_attempts,
        SumCount,
        Some("cfs-only"),
        SS,
        Primary,
        "wake_affine() attempts."
    ),
    m!(
        nr_migrations,
        SumCount,
        None,
        NONE,
        Primary,
        "CPU migrations."
    ),
    CtprofMetricDef {
        name: "nr_migrations_cold",
        rule: AggRule::Dead(|t| t.nr_migrations_cold),
        sched_class: None,
        config_gates: SS,
        is_dead: true,
        description: "Cold migrations: the kernel prints it but never increments it.",
        section: Section::Primary,
    },
    m!(
        nr_forced_migrations,
        SumCount,
        Some("cfs-only"),
        SS,
        Primary,
        "Migrations forced despite cache hotness."
    ),
    m!(
        nr_failed_migrations_affine,
        SumCount,
        Some("cfs-only"),
        SS,
        Primary,
        "Migrations refused by affinity."
    ),
    m!(
        nr_failed_migrations_running,
        SumCount,
        Some("cfs-only"),
        SS,
        Primary,
        "Migrations refused because the thread was running."
    ),
    m!(
        nr_failed_migrations_hot,
        SumCount,
        Some("cfs-only"),
        SS,
        Primary,
        "Migrations refused because the thread was cache-hot."
    ),
    m!(
        wait_sum,
        SumNs,
        Some("non-ext"),
        SS,
        Primary,
        "Total runqueue wait."
    ),
    m!(
        wait_count,
        SumCount,
        Some("non-ext"),
        SS,
        Primary,
        "Runqueue waits."
    ),
    m!(
        voluntary_sleep_ns,
        SumNs,
        Some("non-ext"),
        SS,
        Primary,
        "Sleep time without block time (sum_sleep_runtime - sum_block_runtime)."
    ),
    m!(
        block_sum,
        SumNs,
        Some("non-ext"),
        SS,
        Primary,
        "Uninterruptible block time."
    ),
    m!(
        iowait_sum,
        SumNs,
        Some("non-ext"),
        SS,
        Primary,
        "Time blocked on I/O."
    ),
    m!(
        iowait_count,
        SumCount,
        Some("non-ext"),
        SS,
        Primary,
        "I/O waits."
    ),
    m!(
        core_forceidle_sum,
        SumNs,
        None,
        &["CONFIG_SCHEDSTATS", "CONFIG_SCHED_CORE"],
        Primary,
        "Time forced idle by core scheduling."
    ),
    m!(
        wait_max,
        MaxPeak,
        Some("non-ext"),
        SS,
        Primary,
        "Longest runqueue wait."
    ),
    m!(
        sleep_max,
        MaxPeak,
        Some("non-ext"),
        SS,
        Primary,
        "Longest sleep."
    ),
    m!(
        block_max,
        MaxPeak,
        Some("non-ext"),
        SS,
        Primary,
        "Longest block."
    ),
    m!(
        exec_max,
        MaxPeak,
        Some("non-ext"),
        SS,
        Primary,
        "Longest single run."
    ),
    m!(
        slice_max,
        MaxPeak,
        Some("non-ext"),
        SS,
        Primary,
        "Longest slice."
    ),
    m!(
        utime_clock_ticks,
        SumTicks,
        None,
        NONE,
        Primary,
        "User time, USER_HZ ticks."
    ),
    m!(
        stime_clock_ticks,
        SumTicks,
        None,
        NONE,
        Primary,
        "System time, USER_HZ ticks."
    ),
    m!(
        fair_slice_ns,
        MaxGaugeNs,
        Some("fair-policy"),
        NONE,
        Primary,
        "Current fair slice (se.slice) at capture."
    ),
    m!(
        nr_threads,
        MaxGaugeCount,
        None,
        NONE,
        Primary,
        "Threads in the process (leader only)."
    ),
    m!(minflt, SumCount, None, NONE, Primary, "Minor page faults."),
    m!(majflt, SumCount, None, NONE, Primary, "Major page faults."),
    m!(
        allocated_bytes,
        SumBytes,
        Some("jemalloc"),
        NONE,
        Primary,
        "jemalloc thread-allocated bytes (0 for other allocators)."
    ),
    m!(
        deallocated_bytes,
        SumBytes,
        Some("jemalloc"),
        NONE,
        Primary,
        "jemalloc thread-deallocated bytes (0 for other allocators)."
    ),
    m!(
        rchar,
        SumBytes,
        None,
        IO,
        Primary,
        "Bytes passed to read-like syscalls."
    ),
    m!(
        wchar,
        SumBytes,
        None,
        IO,
        Primary,
        "Bytes passed to write-like syscalls."
    ),
    m!(syscr, SumCount, None, IO, Primary, "Read syscalls."),
    m!(syscw, SumCount, None, IO, Primary, "Write syscalls."),
    m!(
        read_bytes,
        SumBytes,
        None,
        IO,
        Primary,
        "Bytes fetched from storage."
    ),
    m!(
        write_bytes,
        SumBytes,
        None,
        IO,
        Primary,
        "Bytes sent to storage."
    ),
    m!(
        cancelled_write_bytes,
        SumBytes,
        None,
        IO,
        Primary,
        "Dirty bytes whose writeback was cancelled (charged to the truncating thread)."
    ),
];

const TASKSTATS: [[CtprofMetricDef; 4]; 8] = [
    delay!(
        cpu_delay_count,
        cpu_delay_total_ns,
        cpu_delay_max_ns,
        cpu_delay_min_ns,
        "runqueue-wait"
    ),
    delay!(
        blkio_delay_count,
        blkio_delay_total_ns,
        blkio_delay_max_ns,
        blkio_delay_min_ns,
        "block-I/O"
    ),
    delay!(
        swapin_delay_count,
        swapin_delay_total_ns,
        swapin_delay_max_ns,
        swapin_delay_min_ns,
        "swap-in"
    ),
    delay!(
        freepages_delay_count,
        freepages_delay_total_ns,
        freepages_delay_max_ns,
        freepages_delay_min_ns,
        "direct-reclaim"
    ),
    delay!(
        thrashing_delay_count,
        thrashing_delay_total_ns,
        thrashing_delay_max_ns,
        thrashing_delay_min_ns,
        "thrashing"
    ),
    delay!(
        compact_delay_count,
        compact_delay_total_ns,
        compact_delay_max_ns,
        compact_delay_min_ns,
        "compaction"
    ),
    delay!(
        wpcopy_delay_count,
        wpcopy_delay_total_ns,
        wpcopy_delay_max_ns,
        wpcopy_delay_min_ns,
        "write-protect-copy"
    ),
    delay!(
        irq_delay_count,
        irq_delay_total_ns,
        irq_delay_max_ns,
        irq_delay_min_ns,
        "IRQ"
    ),
];

const WATERMARKS: [CtprofMetricDef; 2] = [
    m!(
        hiwater_rss_bytes,
        MaxPeakBytes,
        None,
        XA,
        TaskstatsDelay,
        "Process RSS high-water mark (shared mm: same for every thread)."
    ),
    m!(
        hiwater_vm_bytes,
        MaxPeakBytes,
        None,
        XA,
        TaskstatsDelay,
        "Process virtual-memory high-water mark."
    ),
];

const fn build() -> [CtprofMetricDef; PRIMARY.len() + 34] {
    let mut out = [PRIMARY[0]; PRIMARY.len() + 34];
    let mut i = 0;
    while i < PRIMARY.len() {
        out[i] = PRIMARY[i];
        i += 1;
    }
    let mut c = 0;
    while c < 8 {
        let mut f = 0;
        while f < 4 {
            out[i] = TASKSTATS[c][f];
            i += 1;
            f += 1;
        }
        c += 1;
    }
    out[i] = WATERMARKS[0];
    out[i + 1] = WATERMARKS[1];
    out
}

static ALL: [CtprofMetricDef; PRIMARY.len() + 34] = build();

/// Every registered per-thread metric.
pub static CTPROF_METRICS: &[CtprofMetricDef] = &ALL;
