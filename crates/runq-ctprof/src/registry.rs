//! The metric registry: every per-thread metric with its typed aggregation
//! rule, section, config gates and description.
//!
//! [`AggRule`] variants bind an accessor returning one specific newtype, so
//! pairing a field with the wrong reduction (a peak summed, a category
//! summed, a dead counter reduced) does not compile.

use crate::agg::*;
use crate::avail::Source;
use crate::metric_types::*;
use crate::model::ThreadState;

/// The sub-tables of compare / show output, selected with `--sections`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Section {
    /// Per-thread counters from procfs.
    Primary,
    /// Taskstats delay accounting and watermarks (raw and derived).
    TaskstatsDelay,
    /// Derived metrics other than the taskstats ones.
    Derived,
    /// Per-cgroup cpu / memory / pids usage (`--group-by cgroup`).
    CgroupStats,
    /// Per-cgroup limits (`--group-by cgroup`).
    CgroupLimits,
    /// Per-cgroup `memory.stat` (`--group-by cgroup`).
    MemoryStat,
    /// Per-cgroup `memory.events` (`--group-by cgroup`).
    MemoryEvents,
    /// Per-cgroup PSI (`--group-by cgroup`).
    Pressure,
    /// Host-wide PSI.
    HostPressure,
    /// smaps_rollup of process leaders.
    SmapsRollup,
    /// sched_ext sysfs state.
    SchedExt,
}

impl Section {
    /// Every section, in output order.
    pub const ALL: [Section; 11] = [
        Section::Primary,
        Section::TaskstatsDelay,
        Section::Derived,
        Section::CgroupStats,
        Section::CgroupLimits,
        Section::MemoryStat,
        Section::MemoryEvents,
        Section::Pressure,
        Section::HostPressure,
        Section::SmapsRollup,
        Section::SchedExt,
    ];

    /// The `--sections` name.
    pub fn name(self) -> &'static str {
        match self {
            Section::Primary => "primary",
            Section::TaskstatsDelay => "taskstats-delay",
            Section::Derived => "derived",
            Section::CgroupStats => "cgroup-stats",
            Section::CgroupLimits => "cgroup-limits",
            Section::MemoryStat => "memory-stat",
            Section::MemoryEvents => "memory-events",
            Section::Pressure => "pressure",
            Section::HostPressure => "host-pressure",
            Section::SmapsRollup => "smaps-rollup",
            Section::SchedExt => "sched-ext",
        }
    }

    /// True for the sections that only make sense with `--group-by cgroup`.
    pub fn needs_cgroup_grouping(self) -> bool {
        matches!(
            self,
            Section::CgroupStats
                | Section::CgroupLimits
                | Section::MemoryStat
                | Section::MemoryEvents
                | Section::Pressure
        )
    }
}

/// Display unit of a value (chooses the auto-scale ladder).
pub use runq_common::units::Unit;

/// How a metric reduces across a group's threads; each variant binds an
/// accessor of one newtype.
///
/// The binding is checked by the compiler. A byte counter bound to a
/// nanosecond sum does not compile:
///
/// ```compile_fail,E0308
/// use runq_ctprof::registry::AggRule;
/// let _rule = AggRule::SumNs(|t| t.rchar);
/// ```
///
/// Nor does a lifetime peak bound to a sum (a peak is not additive):
///
/// ```compile_fail,E0308
/// use runq_ctprof::registry::AggRule;
/// let _rule = AggRule::SumNs(|t| t.wait_max);
/// ```
///
/// The correctly typed bindings do:
///
/// ```
/// use runq_ctprof::registry::AggRule;
/// let _sum = AggRule::SumBytes(|t| t.rchar);
/// let _peak = AggRule::MaxPeak(|t| t.wait_max);
/// ```
#[derive(Clone, Copy)]
pub enum AggRule {
    /// Saturating sum of a counter.
    SumCount(fn(&ThreadState) -> MonotonicCount),
    /// Saturating sum of cumulative ns.
    SumNs(fn(&ThreadState) -> MonotonicNs),
    /// Saturating sum of clock ticks.
    SumTicks(fn(&ThreadState) -> ClockTicks),
    /// Saturating sum of bytes.
    SumBytes(fn(&ThreadState) -> Bytes),
    /// Max of a lifetime peak in ns.
    MaxPeak(fn(&ThreadState) -> PeakNs),
    /// Max of a lifetime peak in bytes.
    MaxPeakBytes(fn(&ThreadState) -> PeakBytes),
    /// Max of an ns gauge.
    MaxGaugeNs(fn(&ThreadState) -> GaugeNs),
    /// Max of a count gauge.
    MaxGaugeCount(fn(&ThreadState) -> GaugeCount),
    /// `[min, max]` of a signed ordinal.
    RangeI32(fn(&ThreadState) -> OrdinalI32),
    /// `[min, max]` of an unsigned ordinal.
    RangeU32(fn(&ThreadState) -> OrdinalU32),
    /// Mode of a category.
    Mode(for<'a> fn(&'a ThreadState) -> &'a CategoricalString),
    /// Mode of a char (coerced to text).
    ModeChar(fn(&ThreadState) -> char),
    /// Mode of a bool (coerced to text).
    ModeBool(fn(&ThreadState) -> bool),
    /// Affinity summary of CPU sets.
    Affinity(for<'a> fn(&'a ThreadState) -> &'a CpuSet),
    /// A counter with no live writer: not reduced; the group only says
    /// how many threads read non-zero (a kernel that revived it).
    Dead(fn(&ThreadState) -> DeadCounter),
}

impl std::fmt::Debug for AggRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A group-level value.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Aggregated {
    /// A summed or maxed scalar.
    Scalar {
        /// The value.
        value: u64,
    },
    /// An ordinal range.
    Range {
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
    },
    /// A mode.
    Mode {
        /// Most frequent value.
        value: String,
        /// Threads with it.
        count: u64,
        /// Threads in the group.
        total: u64,
    },
    /// CPU-set summary.
    Affinity {
        /// Fewest CPUs of any thread.
        min_cpus: u64,
        /// Most CPUs of any thread.
        max_cpus: u64,
        /// Every thread had the same mask.
        uniform: bool,
    },
    /// A dead counter: how many threads read non-zero (normally none).
    Dead {
        /// Threads whose reading was not zero.
        nonzero: u64,
    },
    /// No threads (or no readings).
    Empty,
}

impl Aggregated {
    /// The number used for deltas and sorting; `None` for text values.
    pub fn scalar(&self) -> Option<f64> {
        match self {
            Aggregated::Scalar { value } => Some(*value as f64),
            Aggregated::Range { min, max } => Some((*min as f64 + *max as f64) / 2.0),
            Aggregated::Affinity {
                max_cpus,
                uniform: true,
                ..
            } => Some(*max_cpus as f64),
            _ => None,
        }
    }
}

impl AggRule {
    /// The variant name.
    pub fn name(&self) -> &'static str {
        match self {
            AggRule::SumCount(_) => "SumCount",
            AggRule::SumNs(_) => "SumNs",
            AggRule::SumTicks(_) => "SumTicks",
            AggRule::SumBytes(_) => "SumBytes",
            AggRule::MaxPeak(_) => "MaxPeak",
            AggRule::MaxPeakBytes(_) => "MaxPeakBytes",
            AggRule::MaxGaugeNs(_) => "MaxGaugeNs",
            AggRule::MaxGaugeCount(_) => "MaxGaugeCount",
            AggRule::RangeI32(_) => "RangeI32",
            AggRule::RangeU32(_) => "RangeU32",
            AggRule::Mode(_) => "Mode",
            AggRule::ModeChar(_) => "ModeChar",
            AggRule::ModeBool(_) => "ModeBool",
            AggRule::Affinity(_) => "Affinity",
            AggRule::Dead(_) => "Dead",
        }
    }

    /// The unit of the reduced value.
    pub fn unit(&self) -> Unit {
        match self {
            AggRule::SumCount(_) | AggRule::MaxGaugeCount(_) => Unit::Count,
            AggRule::SumNs(_) | AggRule::MaxPeak(_) | AggRule::MaxGaugeNs(_) => Unit::Ns,
            AggRule::SumTicks(_) => Unit::Ticks,
            AggRule::SumBytes(_) | AggRule::MaxPeakBytes(_) => Unit::Bytes,
            AggRule::RangeI32(_) | AggRule::RangeU32(_) => Unit::Scalar,
            _ => Unit::Text,
        }
    }

    /// Reduces the metric over `threads`.
    pub fn apply(&self, threads: &[&ThreadState]) -> Aggregated {
        if threads.is_empty() {
            return Aggregated::Empty;
        }
        let it = threads.iter().copied();
        let scalar = |value| Aggregated::Scalar { value };
        let mode = |m: Option<(String, u64, u64)>| {
            m.map_or(Aggregated::Empty, |(value, count, total)| {
                Aggregated::Mode {
                    value,
                    count,
                    total,
                }
            })
        };
        match *self {
            AggRule::SumCount(f) => scalar(sum_across(it.map(f))),
            AggRule::SumNs(f) => scalar(sum_across(it.map(f))),
            AggRule::SumTicks(f) => scalar(sum_across(it.map(f))),
            AggRule::SumBytes(f) => scalar(sum_across(it.map(f))),
            AggRule::MaxPeak(f) => scalar(max_across(it.map(f))),
            AggRule::MaxPeakBytes(f) => scalar(max_across(it.map(f))),
            AggRule::MaxGaugeNs(f) => scalar(max_across(it.map(f))),
            AggRule::MaxGaugeCount(f) => scalar(max_across(it.map(f))),
            AggRule::RangeI32(f) => {
                range_across(it.map(f)).map_or(Aggregated::Empty, |(min, max)| Aggregated::Range {
                    min,
                    max,
                })
            }
            AggRule::RangeU32(f) => {
                range_across(it.map(f)).map_or(Aggregated::Empty, |(min, max)| Aggregated::Range {
                    min,
                    max,
                })
            }
            AggRule::Dead(f) => Aggregated::Dead {
                nonzero: it.filter(|t| !f(t).is_zero()).count() as u64,
            },
            AggRule::Mode(f) => mode(mode_across(it.map(|t| f(t).label()))),
            AggRule::ModeChar(f) => mode(mode_across(it.map(|t| f(t).to_string()))),
            AggRule::ModeBool(f) => mode(mode_across(it.map(|t| f(t).to_string()))),
            AggRule::Affinity(f) => affinity_across(it.map(f)).map_or(
                Aggregated::Empty,
                |(min_cpus, max_cpus, uniform)| Aggregated::Affinity {
                    min_cpus,
                    max_cpus,
                    uniform,
                },
            ),
        }
    }
}

/// One registered metric.
#[derive(Debug, Clone, Copy)]
pub struct CtprofMetricDef {
    /// Canonical name (`--metrics`, `--sort-by`).
    pub name: &'static str,
    /// Typed reduction.
    pub rule: AggRule,
    /// Scheduler-class restriction, shown as a tag (`cfs-only`, ...).
    pub sched_class: Option<&'static str>,
    /// Kernel configs that must be on for the value to be non-zero.
    pub config_gates: &'static [&'static str],
    /// Kernel counter with no live writer (rendered `[dead]`).
    pub is_dead: bool,
    /// One-line description.
    pub description: &'static str,
    /// The sub-table it renders in.
    pub section: Section,
}

impl CtprofMetricDef {
    /// Tags for metric-list: `[SCHEDSTATS]`, `[cfs-only]`, `[dead]`.
    pub fn tags(&self) -> String {
        let mut t = String::new();
        for g in self.config_gates {
            t.push_str(&format!("[{}]", g.trim_start_matches("CONFIG_")));
        }
        if let Some(c) = self.sched_class {
            t.push_str(&format!("[{c}]"));
        }
        if self.is_dead {
            t.push_str("[dead]");
        }
        t
    }
}

mod table;
pub use table::CTPROF_METRICS;

/// The kernel's own names for counters that ctprof names differently
/// (`/proc/<tid>/sched`, `status`, `stat`, `schedstat`), so a user who
/// types the kernel's name is pointed at the metric that holds it.
pub const KERNEL_NAMES: &[(&str, &str)] = &[
    ("nr_voluntary_switches", "voluntary_csw"),
    ("voluntary_ctxt_switches", "voluntary_csw"),
    ("nr_involuntary_switches", "nonvoluntary_csw"),
    ("nonvoluntary_ctxt_switches", "nonvoluntary_csw"),
    ("se.sum_exec_runtime", "run_time_ns"),
    ("sum_exec_runtime", "run_time_ns"),
    ("cpu_time_ns", "run_time_ns"),
    ("run_delay", "wait_time_ns"),
    ("run_delay_ns", "wait_time_ns"),
    ("run_count", "timeslices"),
    ("pcount", "timeslices"),
    ("sum_block_runtime", "block_sum"),
    ("utime", "utime_clock_ticks"),
    ("stime", "stime_clock_ticks"),
    ("num_threads", "nr_threads"),
    ("slice", "fair_slice_ns"),
    ("VmHWM", "hiwater_rss_bytes"),
    ("VmPeak", "hiwater_vm_bytes"),
];

/// The metric the kernel's counter `name` is kept in, when ctprof names
/// it differently (see [`KERNEL_NAMES`]).
pub fn metric_for_kernel_name(name: &str) -> Option<&'static str> {
    let bare = name
        .trim_start_matches("se.statistics.")
        .trim_start_matches("se.");
    KERNEL_NAMES
        .iter()
        .find(|(k, _)| *k == name || *k == bare)
        .map(|(_, m)| *m)
}

/// Looks a metric up by name.
pub fn metric(name: &str) -> Option<&'static CtprofMetricDef> {
    CTPROF_METRICS.iter().find(|m| m.name == name)
}

/// The source a metric's value comes from, when it can be unavailable
/// independently of the thread's stat file.
pub fn metric_source(def: &CtprofMetricDef) -> Option<Source> {
    let gate = def.config_gates.first().copied().unwrap_or("");
    match gate {
        "CONFIG_SCHEDSTATS" => Some(Source::Schedstats),
        "CONFIG_SCHED_INFO" => Some(Source::Schedstat),
        "CONFIG_TASK_IO_ACCOUNTING" => Some(Source::Io),
        // The runqueue delay comes from sched_info and is filled even with
        // delay accounting off; the other categories need it on.
        "CONFIG_TASK_DELAY_ACCT" if def.name.starts_with("cpu_delay_") => Some(Source::Taskstats),
        "CONFIG_TASK_DELAY_ACCT" => Some(Source::Delayacct),
        "CONFIG_TASK_XACCT" => Some(Source::Taskstats),
        _ => match def.name {
            "nr_migrations" | "fair_slice_ns" => Some(Source::Sched),
            "allocated_bytes" | "deallocated_bytes" => Some(Source::Jemalloc),
            _ => None,
        },
    }
}
