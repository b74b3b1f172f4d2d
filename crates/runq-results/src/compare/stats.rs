//! The statistics of a compare: a confidence interval for the shift
//! between two samples from the Wilcoxon–Mann–Whitney rank test (the
//! Hodges–Lehmann interval).
//!
//! The interval is the range of shifts `d` for which the two-sided rank-sum
//! test of `B - d` against `A` does not reject at the chosen level. It is
//! read off the sorted pairwise differences `b_j - a_i`: with the rank
//! test's critical count `c` (the largest `c` with `P(U <= c) <= alpha/2`),
//! the interval is `[d_(c+1), d_(nm-c)]`. The null distribution of `U` is
//! exact (a Gaussian binomial coefficient) up to 30 values per side and
//! normal beyond. It makes no assumption about the shape of the
//! distributions, so heavy tails do not widen it the way they widen a
//! t-interval, and it needs no random numbers, so a compare is repeatable.

/// Most values per side for which the exact null distribution is used.
const EXACT_MAX: usize = 30;

/// A confidence interval for the shift `B - A`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ShiftInterval {
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// The coverage the interval actually has (the exact test is discrete,
    /// so it is at least the requested level, e.g. 0.968 for 5 vs 5).
    pub coverage: f64,
}

/// The distribution of the Mann–Whitney `U` for sizes `n` and `m` under the
/// null hypothesis: `counts[u]` is the number of orderings with `U = u`.
/// These are the coefficients of the Gaussian binomial `[n+m choose n]_q`.
fn u_counts(n: usize, m: usize) -> Vec<f64> {
    let mut p = vec![0.0; n * m + 1];
    p[0] = 1.0;
    for i in 1..=n {
        // Multiply by (1 - q^(m+i)) ...
        for k in (m + i..p.len()).rev() {
            p[k] -= p[k - m - i];
        }
        // ... and divide by (1 - q^i): a running sum with stride i.
        for k in i..p.len() {
            p[k] += p[k - i];
        }
    }
    p
}

/// The critical count `c` (largest with `P(U <= c) <= alpha/2`) and the
/// interval's coverage; `None` when even `U = 0` is too likely, i.e. too
/// few values for this level.
fn critical_count(n: usize, m: usize, alpha: f64) -> Option<(usize, f64)> {
    if n <= EXACT_MAX && m <= EXACT_MAX {
        let counts = u_counts(n, m);
        let total: f64 = counts.iter().sum();
        let mut cum = 0.0;
        let mut found = None;
        for (u, c) in counts.iter().enumerate() {
            cum += c / total;
            if cum > alpha / 2.0 + 1e-12 {
                break;
            }
            found = Some((u, 1.0 - 2.0 * cum));
        }
        return found;
    }
    let nm = (n * m) as f64;
    let sd = (nm * (n + m + 1) as f64 / 12.0).sqrt();
    let z = normal_quantile(1.0 - alpha / 2.0);
    let c = (nm / 2.0 - z * sd - 0.5).floor();
    (c >= 0.0).then_some((c as usize, 1.0 - alpha))
}

/// The standard normal quantile (Acklam's rational approximation, error
/// below 1.2e-9), for the large-sample interval.
fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The rank-test confidence interval (level `1 - alpha`) for the shift
/// `B - A`; `None` when either side has too few values to reach the level
/// (fewer than 4 per side at 95%).
pub(crate) fn shift_interval(a: &[f64], b: &[f64], alpha: f64) -> Option<ShiftInterval> {
    let (n, m) = (a.len(), b.len());
    if n == 0 || m == 0 {
        return None;
    }
    let (c, coverage) = critical_count(n, m, alpha)?;
    let mut diffs: Vec<f64> = b
        .iter()
        .flat_map(|y| a.iter().map(move |x| y - x))
        .collect();
    diffs.sort_by(f64::total_cmp);
    Some(ShiftInterval {
        low: diffs[c],
        high: diffs[diffs.len() - 1 - c],
        coverage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use runq_common::stats::median;

    /// A deterministic pseudo-random stream (xorshift), for synthetic data.
    fn stream(seed: u64) -> impl FnMut() -> f64 {
        let mut s = seed;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn exact_null_distribution_matches_tables() {
        // 5 vs 5: 252 orderings; P(U <= 2) = 4/252, P(U <= 3) = 7/252.
        let c = u_counts(5, 5);
        assert_eq!(c.iter().sum::<f64>(), 252.0);
        assert_eq!(&c[..4], &[1.0, 1.0, 2.0, 3.0]);
        // Published critical values of U, two-sided 0.05: n=m=5 -> 2,
        // n=m=10 -> 23, n=m=20 -> 127.
        assert_eq!(critical_count(5, 5, 0.05).unwrap().0, 2);
        assert_eq!(critical_count(10, 10, 0.05).unwrap().0, 23);
        assert_eq!(critical_count(20, 20, 0.05).unwrap().0, 127);
        assert!(critical_count(3, 3, 0.05).is_none());
        assert_eq!(critical_count(4, 4, 0.05).unwrap().0, 0);
        // The normal approximation agrees with the exact count near 30.
        let exact = critical_count(30, 30, 0.05).unwrap().0 as i64;
        let nm = 900.0_f64;
        let sd = (nm * 61.0 / 12.0).sqrt();
        let approx = (nm / 2.0 - normal_quantile(0.975) * sd - 0.5).floor() as i64;
        assert!((exact - approx).abs() <= 1, "{exact} vs {approx}");
    }

    #[test]
    fn normal_quantiles() {
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-5);
        assert!((normal_quantile(0.5)).abs() < 1e-9);
        assert!((normal_quantile(0.01) + 2.326_348).abs() < 1e-5);
    }

    #[test]
    fn equal_distributions_cover_zero() {
        let mut misses = 0;
        for seed in 1..=200 {
            let mut r = stream(seed);
            let a: Vec<f64> = (0..10).map(|_| 100.0 + r()).collect();
            let b: Vec<f64> = (0..10).map(|_| 100.0 + r()).collect();
            let ci = shift_interval(&a, &b, 0.05).unwrap();
            if ci.low > 0.0 || ci.high < 0.0 {
                misses += 1;
            }
        }
        // Nominal miss rate is at most 5% (10 of 200); allow sampling noise.
        assert!(misses <= 20, "{misses} of 200 intervals missed 0");
    }

    #[test]
    fn five_percent_shift_is_found() {
        let mut r = stream(7);
        let a: Vec<f64> = (0..10).map(|_| 100.0 + r()).collect();
        let b: Vec<f64> = (0..10).map(|_| 105.0 + r()).collect();
        let ci = shift_interval(&a, &b, 0.05).unwrap();
        assert!(ci.low > 3.5 && ci.high < 6.5, "{ci:?}");
        assert!(ci.coverage >= 0.95);
    }

    #[test]
    fn heavy_tails_do_not_hide_a_shift() {
        // Pareto-like tails (1/u^2): a few huge values on both sides.
        let mut r = stream(11);
        let mut draw = |shift: f64| 100.0 * (1.0 - r()).powf(-0.5) + shift;
        let a: Vec<f64> = (0..30).map(|_| draw(0.0)).collect();
        let b: Vec<f64> = (0..30).map(|_| draw(50.0)).collect();
        let ci = shift_interval(&a, &b, 0.05).unwrap();
        assert!(ci.low > 0.0, "{ci:?}");
        // The mean difference can be pulled anywhere by one outlier; the
        // interval stays around the real shift.
        assert!(ci.low < 50.0 && ci.high > 50.0, "{ci:?}");
    }

    #[test]
    fn too_few_values_give_no_interval() {
        assert!(shift_interval(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 0.05).is_none());
        assert!(shift_interval(&[], &[1.0], 0.05).is_none());
    }
}
