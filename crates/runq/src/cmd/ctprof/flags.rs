//! The values of ctprof's `--group-by`, `--sections` and `--columns`: the
//! command line's spelling of runq-ctprof's own types (the library knows
//! nothing of clap).

use runq_ctprof::group::GroupBy;
use runq_ctprof::registry::Section;
use runq_ctprof::render::Column;

/// `--group-by` of `show` and `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupByFlag {
    /// Process name.
    Pcomm,
    /// cgroup v2 path.
    Cgroup,
    /// Thread name, normalized unless disabled.
    Comm,
    /// Literal thread name.
    CommExact,
}

impl GroupByFlag {
    /// The library's axis.
    pub fn axis(self) -> GroupBy {
        match self {
            GroupByFlag::Pcomm => GroupBy::Pcomm,
            GroupByFlag::Cgroup => GroupBy::Cgroup,
            GroupByFlag::Comm => GroupBy::Comm,
            GroupByFlag::CommExact => GroupBy::CommExact,
        }
    }
}

/// One value of `--sections`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SectionFlag {
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

impl SectionFlag {
    /// The library's section.
    pub fn section(self) -> Section {
        match self {
            SectionFlag::Primary => Section::Primary,
            SectionFlag::TaskstatsDelay => Section::TaskstatsDelay,
            SectionFlag::Derived => Section::Derived,
            SectionFlag::CgroupStats => Section::CgroupStats,
            SectionFlag::CgroupLimits => Section::CgroupLimits,
            SectionFlag::MemoryStat => Section::MemoryStat,
            SectionFlag::MemoryEvents => Section::MemoryEvents,
            SectionFlag::Pressure => Section::Pressure,
            SectionFlag::HostPressure => Section::HostPressure,
            SectionFlag::SmapsRollup => Section::SmapsRollup,
            SectionFlag::SchedExt => Section::SchedExt,
        }
    }
}

/// One value of `--columns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColumnFlag {
    /// The group name, with `[only-baseline]`-style marks.
    Group,
    /// Thread counts (`baseline/candidate` when comparing).
    Threads,
    /// The metric name.
    Metric,
    /// The baseline value.
    Baseline,
    /// The candidate value.
    Candidate,
    /// Candidate minus baseline.
    Delta,
    /// The change in percent.
    #[value(name = "%")]
    Pct,
    /// An arrow for the direction of the change.
    Arrow,
    /// The single value of `show`.
    Value,
}

impl ColumnFlag {
    /// The library's column.
    pub fn column(self) -> Column {
        match self {
            ColumnFlag::Group => Column::Group,
            ColumnFlag::Threads => Column::Threads,
            ColumnFlag::Metric => Column::Metric,
            ColumnFlag::Baseline => Column::Baseline,
            ColumnFlag::Candidate => Column::Candidate,
            ColumnFlag::Delta => Column::Delta,
            ColumnFlag::Pct => Column::Pct,
            ColumnFlag::Arrow => Column::Arrow,
            ColumnFlag::Value => Column::Value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    /// The spelling of a flag value.
    fn spelled<T: ValueEnum>(v: &T) -> String {
        v.to_possible_value().unwrap().get_name().to_string()
    }

    #[test]
    fn every_value_is_spelled_as_the_library_names_it() {
        let sections: Vec<Section> = SectionFlag::value_variants()
            .iter()
            .map(|f| f.section())
            .collect();
        assert_eq!(sections, Section::ALL, "every section, in order");
        for f in SectionFlag::value_variants() {
            assert_eq!(spelled(f), f.section().name());
        }
        for f in ColumnFlag::value_variants() {
            assert_eq!(spelled(f), f.column().name());
        }
        for f in GroupByFlag::value_variants() {
            assert_eq!(spelled(f), f.axis().name());
        }
    }
}
