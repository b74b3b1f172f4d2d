//! Derived metrics: formulas over a group's aggregated inputs. A missing
//! input or a zero denominator yields `None`, rendered as `-`.

use std::collections::BTreeMap;

use crate::registry::{Aggregated, Section, Unit};

/// A group's aggregated metrics by name.
pub type Metrics = BTreeMap<&'static str, Aggregated>;

/// One derived metric.
#[derive(Debug, Clone, Copy)]
pub struct DerivedMetricDef {
    /// Canonical name.
    pub name: &'static str,
    /// Formula, as documented.
    pub formula: &'static str,
    /// The computation.
    pub compute: fn(&Metrics) -> Option<f64>,
    /// Display unit.
    pub unit: Unit,
    /// A `[0, 1]` ratio: no percent column.
    pub is_ratio: bool,
    /// `Derived` or `TaskstatsDelay`.
    pub section: Section,
    /// One-line description.
    pub description: &'static str,
}

/// The scalar of input `name`, if present.
pub fn input_scalar(m: &Metrics, name: &str) -> Option<f64> {
    m.get(name)?.scalar()
}

/// `num / den`, `None` for a zero denominator.
pub fn ratio_compute(m: &Metrics, num: &str, den: &str) -> Option<f64> {
    let d = input_scalar(m, den)?;
    (d != 0.0).then_some(input_scalar(m, num)? / d)
}

/// `a / (a + b)`.
pub fn ratio_of_sum_compute(m: &Metrics, a: &str, b: &str) -> Option<f64> {
    let x = input_scalar(m, a)?;
    let s = x + input_scalar(m, b)?;
    (s != 0.0).then_some(x / s)
}

macro_rules! avg_delay {
    ($name:literal, $total:literal, $count:literal, $desc:literal) => {
        DerivedMetricDef {
            name: $name,
            formula: concat!($total, " / ", $count),
            compute: |m| ratio_compute(m, $total, $count),
            unit: Unit::Ns,
            is_ratio: false,
            section: Section::TaskstatsDelay,
            description: $desc,
        }
    };
}

fn total_offcpu(m: &Metrics) -> Option<f64> {
    let v = |n: &str| input_scalar(m, n).unwrap_or(0.0);
    // Present at all only when taskstats fields exist in the group.
    input_scalar(m, "cpu_delay_total_ns")?;
    let summed: f64 = ["cpu", "blkio", "freepages", "compact", "wpcopy", "irq"]
        .iter()
        .map(|c| v(&format!("{c}_delay_total_ns")))
        .sum();
    Some(summed + v("swapin_delay_total_ns").max(v("thrashing_delay_total_ns")))
}

/// The 17 derived metrics.
pub static CTPROF_DERIVED_METRICS: &[DerivedMetricDef] = &[
    DerivedMetricDef {
        name: "affine_success_ratio",
        formula: "nr_wakeups_affine / nr_wakeups_affine_attempts",
        compute: |m| ratio_compute(m, "nr_wakeups_affine", "nr_wakeups_affine_attempts"),
        unit: Unit::Scalar,
        is_ratio: true,
        section: Section::Derived,
        description: "wake_affine() success ratio (CFS only).",
    },
    DerivedMetricDef {
        name: "avg_wait_ns",
        formula: "wait_sum / wait_count",
        compute: |m| ratio_compute(m, "wait_sum", "wait_count"),
        unit: Unit::Ns,
        is_ratio: false,
        section: Section::Derived,
        description: "Average runqueue wait per event (schedstats).",
    },
    DerivedMetricDef {
        name: "cpu_efficiency",
        formula: "run_time_ns / (run_time_ns + wait_time_ns)",
        compute: |m| ratio_of_sum_compute(m, "run_time_ns", "wait_time_ns"),
        unit: Unit::Scalar,
        is_ratio: true,
        section: Section::Derived,
        description: "Fraction of scheduler-tracked time spent on a CPU.",
    },
    DerivedMetricDef {
        name: "avg_slice_ns",
        formula: "run_time_ns / timeslices",
        compute: |m| ratio_compute(m, "run_time_ns", "timeslices"),
        unit: Unit::Ns,
        is_ratio: false,
        section: Section::Derived,
        description: "Average on-CPU slice.",
    },
    DerivedMetricDef {
        name: "involuntary_csw_ratio",
        formula: "nonvoluntary_csw / (voluntary_csw + nonvoluntary_csw)",
        compute: |m| ratio_of_sum_compute(m, "nonvoluntary_csw", "voluntary_csw"),
        unit: Unit::Scalar,
        is_ratio: true,
        section: Section::Derived,
        description: "Fraction of context switches that were preemptions.",
    },
    DerivedMetricDef {
        name: "disk_io_fraction",
        formula: "read_bytes / rchar",
        compute: |m| ratio_compute(m, "read_bytes", "rchar"),
        unit: Unit::Scalar,
        is_ratio: true,
        section: Section::Derived,
        description:
            "Share of read bytes that went past the page cache (can exceed 1 with readahead).",
    },
    DerivedMetricDef {
        name: "live_heap_estimate",
        formula: "allocated_bytes - deallocated_bytes",
        compute: |m| {
            Some(input_scalar(m, "allocated_bytes")? - input_scalar(m, "deallocated_bytes")?)
        },
        unit: Unit::Bytes,
        is_ratio: false,
        section: Section::Derived,
        description: "jemalloc live-heap estimate (signed; zero for other allocators).",
    },
    DerivedMetricDef {
        name: "avg_iowait_ns",
        formula: "iowait_sum / iowait_count",
        compute: |m| ratio_compute(m, "iowait_sum", "iowait_count"),
        unit: Unit::Ns,
        is_ratio: false,
        section: Section::Derived,
        description: "Average iowait per blocking event (schedstats).",
    },
    avg_delay!(
        "avg_cpu_delay_ns",
        "cpu_delay_total_ns",
        "cpu_delay_count",
        "Average runqueue wait per event (taskstats; racy at the sub-event scale)."
    ),
    avg_delay!(
        "avg_blkio_delay_ns",
        "blkio_delay_total_ns",
        "blkio_delay_count",
        "Average synchronous block-I/O wait per event."
    ),
    avg_delay!(
        "avg_swapin_delay_ns",
        "swapin_delay_total_ns",
        "swapin_delay_count",
        "Average swap-in wait (overlaps thrashing)."
    ),
    avg_delay!(
        "avg_freepages_delay_ns",
        "freepages_delay_total_ns",
        "freepages_delay_count",
        "Average direct-reclaim wait."
    ),
    avg_delay!(
        "avg_thrashing_delay_ns",
        "thrashing_delay_total_ns",
        "thrashing_delay_count",
        "Average thrashing wait (overlaps swap-in)."
    ),
    avg_delay!(
        "avg_compact_delay_ns",
        "compact_delay_total_ns",
        "compact_delay_count",
        "Average compaction wait."
    ),
    avg_delay!(
        "avg_wpcopy_delay_ns",
        "wpcopy_delay_total_ns",
        "wpcopy_delay_count",
        "Average write-protect-copy fault wait."
    ),
    avg_delay!(
        "avg_irq_delay_ns",
        "irq_delay_total_ns",
        "irq_delay_count",
        "Average IRQ window charged per event."
    ),
    DerivedMetricDef {
        name: "total_offcpu_delay_ns",
        formula: "cpu + blkio + freepages + compact + wpcopy + irq + max(swapin, thrashing)",
        compute: total_offcpu,
        unit: Unit::Ns,
        is_ratio: false,
        section: Section::TaskstatsDelay,
        description:
            "Every off-CPU delay bucket; swap-in and thrashing overlap, so their max counts once.",
    },
];

/// Looks a derived metric up by name.
pub fn derived(name: &str) -> Option<&'static DerivedMetricDef> {
    CTPROF_DERIVED_METRICS.iter().find(|d| d.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pairs: &[(&'static str, u64)]) -> Metrics {
        pairs
            .iter()
            .map(|&(k, v)| (k, Aggregated::Scalar { value: v }))
            .collect()
    }

    #[test]
    fn seventeen_with_formulas() {
        assert_eq!(CTPROF_DERIVED_METRICS.len(), 17);
        assert_eq!(
            CTPROF_DERIVED_METRICS
                .iter()
                .filter(|d| d.section == Section::TaskstatsDelay)
                .count(),
            9
        );
    }

    #[test]
    fn missing_input_or_zero_denominator_is_none() {
        let d = derived("avg_wait_ns").unwrap();
        assert_eq!((d.compute)(&m(&[("wait_sum", 10)])), None);
        assert_eq!(
            (d.compute)(&m(&[("wait_sum", 10), ("wait_count", 0)])),
            None
        );
        assert_eq!(
            (d.compute)(&m(&[("wait_sum", 10), ("wait_count", 4)])),
            Some(2.5)
        );
        let e = derived("cpu_efficiency").unwrap();
        assert_eq!(
            (e.compute)(&m(&[("run_time_ns", 3), ("wait_time_ns", 1)])),
            Some(0.75)
        );
        assert_eq!(
            (e.compute)(&m(&[("run_time_ns", 0), ("wait_time_ns", 0)])),
            None
        );
    }

    #[test]
    fn offcpu_takes_max_of_swapin_and_thrashing() {
        let t = derived("total_offcpu_delay_ns").unwrap();
        let v = (t.compute)(&m(&[
            ("cpu_delay_total_ns", 1),
            ("blkio_delay_total_ns", 2),
            ("swapin_delay_total_ns", 10),
            ("thrashing_delay_total_ns", 7),
            ("irq_delay_total_ns", 4),
        ]));
        assert_eq!(v, Some(17.0));
        let h = derived("live_heap_estimate").unwrap();
        assert_eq!(
            (h.compute)(&m(&[("allocated_bytes", 1), ("deallocated_bytes", 5)])),
            Some(-4.0)
        );
    }
}
