//! Reductions of one metric across the threads of a group.
//!
//! Each reduction family is a trait implemented only by the newtypes whose
//! kernel semantics allow it: counters sum, peaks and gauges take the max,
//! ordinals take a range, categories take the mode. A [`crate::metric_types::DeadCounter`]
//! implements none of them.

use crate::metric_types::*;

/// Values that may be summed across threads (saturating).
pub trait Summable: Copy {
    /// The raw value.
    fn raw(self) -> u64;
}

/// Values whose group reduction is the maximum.
pub trait Maxable: Copy {
    /// The raw value.
    fn raw(self) -> u64;
}

/// Bounded ordinals reduced to a `[min, max]` range.
pub trait Rangeable: Copy + Ord {
    /// The value widened to i64.
    fn widen(self) -> i64;
}

/// Categorical values reduced to their mode.
pub trait Modeable {
    /// The value as text.
    fn label(&self) -> String;
}

macro_rules! impl_raw {
    ($tr:ident: $($t:ty),*) => {$(impl $tr for $t { fn raw(self) -> u64 { self.0 } })*};
}
impl_raw!(Summable: MonotonicCount, MonotonicNs, ClockTicks, Bytes);
impl_raw!(Maxable: PeakNs, PeakBytes, GaugeNs, GaugeCount);

impl Rangeable for OrdinalI32 {
    fn widen(self) -> i64 {
        i64::from(self.0)
    }
}
impl Rangeable for OrdinalU32 {
    fn widen(self) -> i64 {
        i64::from(self.0)
    }
}
impl Rangeable for OrdinalU64 {
    fn widen(self) -> i64 {
        i64::try_from(self.0).unwrap_or(i64::MAX)
    }
}
impl Modeable for CategoricalString {
    fn label(&self) -> String {
        self.0.clone()
    }
}

/// Saturating sum across values.
///
/// Only [`Summable`] values add up. A category has no sum:
///
/// ```compile_fail,E0277
/// use runq_ctprof::agg::sum_across;
/// use runq_ctprof::metric_types::CategoricalString;
/// let _ = sum_across(vec![CategoricalString("SCHED_OTHER".into())]);
/// ```
///
/// A dead counter (one the kernel no longer updates) has none either:
///
/// ```compile_fail,E0277
/// use runq_ctprof::agg::sum_across;
/// use runq_ctprof::metric_types::DeadCounter;
/// let _ = sum_across([DeadCounter(1)]);
/// ```
///
/// Counters do:
///
/// ```
/// use runq_ctprof::agg::sum_across;
/// use runq_ctprof::metric_types::MonotonicCount;
/// assert_eq!(sum_across([MonotonicCount(2), MonotonicCount(3)]), 5);
/// ```
pub fn sum_across<T: Summable>(values: impl IntoIterator<Item = T>) -> u64 {
    values
        .into_iter()
        .fold(0u64, |acc, v| acc.saturating_add(v.raw()))
}

/// Maximum across values (0 for none).
///
/// A dead counter has no maximum:
///
/// ```compile_fail,E0277
/// use runq_ctprof::agg::max_across;
/// use runq_ctprof::metric_types::DeadCounter;
/// let _ = max_across([DeadCounter(1)]);
/// ```
///
/// Peaks and gauges do:
///
/// ```
/// use runq_ctprof::agg::max_across;
/// use runq_ctprof::metric_types::PeakNs;
/// assert_eq!(max_across([PeakNs(2), PeakNs(7)]), 7);
/// ```
pub fn max_across<T: Maxable>(values: impl IntoIterator<Item = T>) -> u64 {
    values.into_iter().map(Maxable::raw).max().unwrap_or(0)
}

/// `[min, max]` across values; `None` for no values.
pub fn range_across<T: Rangeable>(values: impl IntoIterator<Item = T>) -> Option<(i64, i64)> {
    let mut it = values.into_iter().map(Rangeable::widen);
    let first = it.next()?;
    Some(it.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v))))
}

/// Most frequent label; ties go to the lexicographically smallest.
/// Returns `(label, count, total)`.
pub fn mode_across(labels: impl IntoIterator<Item = String>) -> Option<(String, u64, u64)> {
    let mut counts = std::collections::BTreeMap::<String, u64>::new();
    let mut total = 0;
    for l in labels {
        *counts.entry(l).or_default() += 1;
        total += 1;
    }
    // BTreeMap iterates in order, so `max_by` with `>` keeps the first
    // (smallest) label among equal counts.
    let mut best: Option<(String, u64)> = None;
    for (l, c) in counts {
        if best.as_ref().is_none_or(|(_, bc)| c > *bc) {
            best = Some((l, c));
        }
    }
    best.map(|(l, c)| (l, c, total))
}

/// Affinity summary: smallest and largest CPU count, and whether every
/// thread had the same mask.
pub fn affinity_across<'a>(sets: impl IntoIterator<Item = &'a CpuSet>) -> Option<(u64, u64, bool)> {
    let mut it = sets.into_iter();
    let first = it.next()?;
    let n = first.0.len() as u64;
    let (mut lo, mut hi, mut uniform) = (n, n, true);
    for s in it {
        let c = s.0.len() as u64;
        lo = lo.min(c);
        hi = hi.max(c);
        uniform &= s == first;
    }
    Some((lo, hi, uniform))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn sum_saturates(v in proptest::collection::vec(any::<u64>(), 0..20)) {
            let s = sum_across(v.iter().map(|&x| MonotonicNs(x)));
            let exact: u128 = v.iter().map(|&x| u128::from(x)).sum();
            prop_assert_eq!(u128::from(s), exact.min(u128::from(u64::MAX)));
        }

        #[test]
        fn max_of_peaks(v in proptest::collection::vec(any::<u64>(), 0..20)) {
            prop_assert_eq!(max_across(v.iter().map(|&x| PeakNs(x))), v.iter().copied().max().unwrap_or(0));
        }

        #[test]
        fn range_bounds(v in proptest::collection::vec(any::<i32>(), 1..20)) {
            let (lo, hi) = range_across(v.iter().map(|&x| OrdinalI32(x))).unwrap();
            prop_assert!(lo <= hi);
            prop_assert!(v.iter().all(|&x| i64::from(x) >= lo && i64::from(x) <= hi));
            prop_assert!(v.contains(&(lo as i32)) && v.contains(&(hi as i32)));
        }

        #[test]
        fn mode_ties_lex_smallest(a in 1u64..5, names in proptest::collection::btree_set("[a-z]{1,4}", 1..5)) {
            let labels: Vec<String> = names.iter().flat_map(|n| std::iter::repeat_n(n.clone(), a as usize)).collect();
            let (m, c, t) = mode_across(labels).unwrap();
            prop_assert_eq!(&m, names.iter().next().unwrap());
            prop_assert_eq!(c, a);
            prop_assert_eq!(t, a * names.len() as u64);
        }
    }

    #[test]
    fn mode_and_affinity_examples() {
        let l = ["true", "false", "true", "false"].map(String::from);
        assert_eq!(mode_across(l), Some(("false".into(), 2, 4)));
        assert_eq!(mode_across(Vec::<String>::new()), None);
        let a = CpuSet(vec![0, 1]);
        let b = CpuSet(vec![0]);
        assert_eq!(affinity_across([&a, &a]), Some((2, 2, true)));
        assert_eq!(affinity_across([&a, &b]), Some((1, 2, false)));
        assert_eq!(range_across(Vec::<OrdinalU32>::new()), None);
    }
}
